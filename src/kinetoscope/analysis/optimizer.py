"""Parameter updates: what optimizers and autograd's gradient accumulation leave in a trace.

`torch.optim` wraps every `step()` in a `Optimizer.step#<Class>.step` range
(and `zero_grad()` in `Optimizer.zero_grad#...`). Inside, the implementation
shows how the update runs: `foreach=False` loops over the parameters in Python,
one op (and, on a GPU, one kernel launch) per parameter and per arithmetic
operation (`aten::mul_`, `aten::lerp_`, `aten::addcdiv_`, ... for Adam);
`foreach=True` batches each operation over all parameters (`aten::_foreach_*`,
multi-tensor kernels); `fused=True` runs the whole update as one op per group
(`aten::_fused_adam_`). Autograd's `AccumulateGrad` adds a new gradient into
`.grad` (an `aten::add_` per parameter when gradients accumulate).

These updates touch different tensors one after the other: they are not a
chain of one tensor through several pointwise kernels, which is what
`analysis.fusion` looks for.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np

from ..trace import Cat, Trace
from .ancestry import ancestor_of_kind

OPTIMIZER_STEP_RE = re.compile(r"^Optimizer\.step#(\w+)\.step$")
_UPDATE_RANGE_RE = re.compile(r"^Optimizer\.(?:step|zero_grad)#|AccumulateGrad")
_BATCHED_PREFIXES = ("aten::_foreach_", "aten::_fused_")
#: ops of an optimizer step that are not the per-parameter arithmetic (scalar reads of the
#: step counter, dtype/device moves, allocations, views)
_NOT_ARITHMETIC = frozenset(
    {
        "aten::item",
        "aten::_local_scalar_dense",
        "aten::to",
        "aten::_to_copy",
        "aten::copy_",
        "aten::empty",
        "aten::empty_like",
        "aten::empty_strided",
        "aten::zeros_like",
        "aten::detach",
        "aten::view",
        "aten::view_as_real",
        "aten::is_complex",
        "aten::stack",
        "aten::clone",
        "aten::lift_fresh",
        "aten::detach_",
        "aten::slice",
        "aten::select",
        "aten::alias",
    }
)


def batched(name: str) -> bool:
    """A `_foreach_*` / `_fused_*` op: already one call for many tensors."""
    return name.startswith(_BATCHED_PREFIXES)


def parameter_update(trace: Trace, op: int) -> bool:
    """Whether host op `op` is part of a parameter update (an optimizer step, zero_grad, or
    autograd accumulating a gradient) or a batched multi-tensor op."""
    return bool(parameter_updates(trace)[op])


def parameter_updates(trace: Trace) -> np.ndarray:
    """`parameter_update` of every event at once (a mask): a batched op, or an event with an
    update range among its ancestors or itself, found by one tree pass instead of a walk to
    the root per op."""
    return trace.memo(_parameter_updates)


def _parameter_updates(trace: Trace) -> np.ndarray:
    in_range = np.isin(
        trace.name_id, trace.name_ids_matching(lambda n: bool(_UPDATE_RANGE_RE.search(n)))
    )
    under_range = ancestor_of_kind(trace, in_range, outermost=False) >= 0
    out = under_range | np.isin(trace.name_id, trace.name_ids_matching(batched))
    out.setflags(write=False)
    return out


@dataclass(frozen=True)
class OptimizerStep:
    """One `optimizer.step()` call and the outermost ops it ran."""

    index: int
    optimizer: str  # "Adam", "SGD", ...
    per_parameter: np.ndarray  # outermost arithmetic ops issued one parameter at a time
    batched: np.ndarray  # outermost `_foreach_*` / `_fused_*` ops

    def host_us(self, trace: Trace) -> float:
        return float(trace.dur[self.per_parameter].sum())


def _outermost_ops(trace: Trace, index: int) -> np.ndarray:
    """CPU ops inside host range `index` with no other CPU op between them and it."""
    cpu_op = int(Cat.CPU_OP)
    inside = trace.events_in(float(trace.ts[index]), float(trace.end[index]))
    inside = inside[(trace.cat[inside] == cpu_op) & (trace.lane[inside] == trace.lane[index])]
    keep = []
    for i in inside.tolist():
        if i == index:
            continue
        p = int(trace.parent[i])
        while p >= 0 and p != index and trace.cat[p] != cpu_op:
            p = int(trace.parent[p])
        if p == index:
            keep.append(i)
    return np.array(keep, dtype=np.int64)


def optimizer_steps(trace: Trace) -> list[OptimizerStep]:
    """Every `Optimizer.step#...` range on a host thread, in time order."""
    ids = trace.name_ids_matching(lambda n: bool(OPTIMIZER_STEP_RE.match(n)))
    if not len(ids):
        return []
    ranges = np.flatnonzero(np.isin(trace.name_id, ids) & (trace.lane_kind == 1))
    ranges = ranges[np.argsort(trace.ts[ranges], kind="stable")]
    out = []
    for r in ranges.tolist():
        ops = _outermost_ops(trace, r)
        names = [trace.name(i) for i in ops.tolist()]
        is_batched = np.array([batched(n) for n in names], dtype=bool)
        arithmetic = np.array(
            [n.startswith("aten::") and n not in _NOT_ARITHMETIC for n in names], dtype=bool
        )
        match = OPTIMIZER_STEP_RE.match(trace.name(r))
        out.append(
            OptimizerStep(
                index=r,
                optimizer=match.group(1) if match else "?",
                per_parameter=ops[arithmetic & ~is_batched] if len(ops) else ops,
                batched=ops[is_batched] if len(ops) else ops,
            )
        )
    return out
