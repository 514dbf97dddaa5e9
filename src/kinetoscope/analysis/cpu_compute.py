"""Host time spent doing the arithmetic: the CPU run's analog of device busy time.

On a CPU run the same thread both decides what to run (Python, the
dispatcher, composite ops that only call other ops) and runs the math (the
BLAS call inside `aten::mm`, oneDNN inside `aten::mkldnn_convolution`, the
vectorized loop inside `aten::add`). The profiler records no kernels, so the
math has to be found in the op tree, from how PyTorch dispatches:

- an op that ends in a CPU kernel spends its *self time* (its duration minus
  the ops it calls) in that kernel: the GEMM, the convolution, the reduction,
  the elementwise loop;
- a composite op (`aten::matmul`, `aten::linear`, `aten::conv2d`,
  `aten::softmax`, ...) only calls other ops: its self time is dispatch glue;
- view, allocation and conversion ops (`aten::view`, `aten::empty`,
  `aten::resolve_conj`, `aten::to`, ...) rewrite metadata or hand work to a
  copy op: their self time is never arithmetic, whatever their shape.

So a call does the math when it is a data op (a namespaced op, not view,
allocation or conversion, not the autograd engine's bookkeeping) that spends
at least as long in itself as in the data ops it calls: `aten::mm` (its
children are `resolve_conj` views), `aten::addmm` (it seeds the output with
the bias through `copy_`, then runs a GEMM many times longer), `aten::index`
(a `nonzero`, then its gather). A composite's glue is shorter than the kernel
it calls, so it falls out; at tiny sizes, where glue and kernel cost about
the same, the split can go either way, and both are overhead-sized then.

The compute intervals are the self time of those calls (their spans minus
their direct children), merged over threads: disjoint, so the host-time
decomposition can give each instant to one part. They are measured only on a
run that used no device (`analysis.roofline.ran_on_cpu`: no device work, no
launch calls, no GPU listed): with a device, even an unrecorded one (a CUPTI
counter run), an op's self time is a launch, not math.
"""

from __future__ import annotations

import numpy as np

from ..trace import Cat, Trace
from .dispatch import METADATA_OPS
from .intervals import merge
from .roofline import ran_on_cpu

#: Ops that allocate, alias or convert without arithmetic of their own (conversions hand
#: the data to `copy_`, which is counted where it runs); with METADATA_OPS (the views).
NO_MATH_OPS = METADATA_OPS | frozenset(
    {
        "aten::empty",
        "aten::empty_like",
        "aten::empty_strided",
        "aten::new_empty",
        "aten::new_empty_strided",
        "aten::resize_",
        "aten::as_strided_",
        "aten::set_",
        "aten::resolve_conj",
        "aten::resolve_neg",
        "aten::conj",
        "aten::_conj",
        "aten::_neg_view",
        "aten::contiguous",
        "aten::to",
        "aten::_to_copy",
        "aten::type_as",
        "aten::item",
        "aten::_local_scalar_dense",
        "aten::is_nonzero",
        "aten::result_type",
        "aten::size",
        "aten::stride",
        "aten::numel",
        "aten::dim",
    }
)
#: Namespaces of framework bookkeeping, not tensor math (the autograd engine's node calls,
#: the profiler's own ranges, collectives that wait on peers).
FRAMEWORK_NAMESPACES = ("autograd::", "torch::autograd::", "profiler::", "c10d::")


def is_data_op(name: str) -> bool:
    """A namespaced tensor op that may run a kernel (`aten::add`, `quantized::linear`)."""
    return (
        "::" in name
        and not name.startswith(FRAMEWORK_NAMESPACES)
        and " " not in name  # "autograd::engine::evaluate_function: X", annotations
        and name not in NO_MATH_OPS
    )


def math_ops(trace: Trace) -> np.ndarray:
    """Indices of the host op calls that run the arithmetic themselves (module docstring)."""
    return trace.memo(_math_ops)


def _math_ops(trace: Trace) -> np.ndarray:
    ids = trace.name_ids_matching(is_data_op)
    data = np.flatnonzero(
        trace.mask(Cat.CPU_OP) & (trace.lane_kind == 1) & np.isin(trace.name_id, ids)
    )
    # time each call spends inside the data ops it calls directly
    parent = trace.parent[data]
    has_parent = parent >= 0
    in_children = np.bincount(
        parent[has_parent], weights=trace.dur[data[has_parent]], minlength=len(trace)
    )
    keep = trace.self_time[data] >= in_children[data]
    out = data[keep]
    out.setflags(write=False)
    return out


def compute_intervals(trace: Trace) -> tuple[np.ndarray, np.ndarray]:
    """Sorted disjoint intervals during which some thread runs math-op self time; empty
    unless the run used no device (there an op's self time is a launch)."""
    return trace.memo(_intervals)


def _intervals(trace: Trace) -> tuple[np.ndarray, np.ndarray]:
    if not ran_on_cpu(trace):
        return np.zeros(0), np.zeros(0)
    ops = math_ops(trace)
    if not len(ops):
        return np.zeros(0), np.zeros(0)
    # direct children of the math ops, ordered by (parent, start): the gaps between them
    # (and before the first, after the last) are the parent's self time
    is_op = np.zeros(len(trace), dtype=bool)
    is_op[ops] = True
    kids = np.flatnonzero(trace.host_tree_mask & (trace.parent >= 0))
    kids = kids[is_op[trace.parent[kids]]]
    kids = kids[np.lexsort((trace.ts[kids], trace.parent[kids]))]
    kid_parent = trace.parent[kids]
    first = np.ones(len(kids), dtype=bool)
    first[1:] = kid_parent[1:] != kid_parent[:-1]
    last = np.ones(len(kids), dtype=bool)
    last[:-1] = first[1:]
    # piece before each child: from the previous child's end (or the parent's start)
    prev_end = np.where(first, trace.ts[kid_parent], np.roll(trace.end[kids], 1))
    starts = [prev_end, trace.end[kids[last]]]
    ends = [trace.ts[kids], trace.end[kid_parent[last]]]
    # math ops without children: their whole span
    lonely = ops[~np.isin(ops, kid_parent)]
    starts.append(trace.ts[lonely])
    ends.append(trace.end[lonely])
    s, e = np.concatenate(starts), np.concatenate(ends)
    keep = e > s
    return merge(s[keep], e[keep])
