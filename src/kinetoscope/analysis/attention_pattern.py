"""Attention written by hand: matmul -> softmax (-> dropout) -> matmul in one scope.

`softmax(q @ k.T * scale + mask) @ v` written out in Python (an eager HF
model, OWLv2's bmm + softmax, a tutorial transformer) never reaches SDPA, so
no backend op or fused kernel names it. What the profiler records is the
order of the ops: a batched product of two activations, the softmax of its
result, and a second batched product that takes the softmax's output as its
left operand, all called from one module or op (siblings under one parent on
the host call tree, a few scaling/mask/cast ops allowed in between). The
seq x seq score matrix is written to device memory and read back at each step,
which the fused kernels avoid.

Where `record_shapes` wrote the inputs, the shapes must also be attention's:
both products batched (rank >= 3, so neither operand is a weight matrix), the
softmax's input the first product's [..., M, N] output, the second product's
left operand that same tensor and its right operand [..., N, D]. A classifier
head (`softmax(h @ W)`) fails this: W is a 2-D weight. Without shapes the
match rests on op order alone, and says so.

Products and softmaxes inside an SDPA call or nn.MultiheadAttention's fast
path are that call's math backend, not hand-written attention; the caller
passes those calls' subtrees to leave out.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

import numpy as np

from ..trace import Cat, Trace
from .ancestry import ancestor_of_kind
from .window import in_window

#: Batched products that compute q @ k^T and p @ v.
MATMUL_OPS = frozenset({"aten::matmul", "aten::bmm", "aten::baddbmm", "aten::einsum"})
SOFTMAX_OPS = frozenset({"aten::softmax", "aten::_softmax", "aten::_safe_softmax"})
DROPOUT_OPS = frozenset({"aten::dropout", "aten::native_dropout", "aten::feature_dropout"})
#: Ops allowed between the product and the softmax (scale, mask building, cast) and after
#: it: a causal mask built inline (new_ones, tril, bitwise_not, slice, view, masked_fill)
#: takes about ten.
MAX_BETWEEN = 16


@dataclass(frozen=True)
class UnfusedAttention:
    """One matmul -> softmax -> matmul chain: the three ops (event indices) and their scope."""

    scope: int  # the enclosing module/op event, -1 for a thread's top level
    first: int  # q @ k^T
    softmax: int
    second: int  # p @ v
    ops: tuple[int, ...]  # every top-level op from first to second (their kernels are its cost)
    dropout: bool
    #: True: shapes recorded and attention's; None: no shapes, op order only
    shaped: bool | None


def _tensor_dims(trace: Trace, index: int) -> list[list[int]] | None:
    """Recorded shapes of the op's tensor operands (scalars and strings dropped), or None."""
    raw = trace.input_dims.get(index)
    if not raw:
        return None
    try:
        dims = json.loads(raw)
    except ValueError:
        return None
    if not isinstance(dims, list):
        return None
    out = []
    for x in dims:  # a TensorList argument (einsum's operands) is a list of shapes
        for shape in x if x and isinstance(x, list) and isinstance(x[0], list) else [x]:
            if isinstance(shape, list) and shape and all(isinstance(d, int) for d in shape):
                out.append(shape)
    return out or None


def _operands(trace: Trace, index: int) -> tuple[list[int], list[int]] | None:
    dims = _tensor_dims(trace, index)
    if dims is None or len(dims) < 2:
        return None
    return (dims[-2], dims[-1]) if trace.name(index) == "aten::baddbmm" else (dims[0], dims[1])


def _shaped(trace: Trace, first: int, softmax: int, second: int) -> bool | None:
    """Whether recorded shapes are attention's (None when a shape is missing)."""
    a, s, b = _operands(trace, first), _tensor_dims(trace, softmax), _operands(trace, second)
    if a is None or s is None or b is None:
        return None
    (q, k), scores, (p, v) = a, s[0], b
    if min(len(q), len(k), len(p), len(v)) < 3:  # a 2-D operand is a weight, not an activation
        return False
    if trace.name(first) == "aten::einsum":  # the equation decides the layout; check the rest
        return p == scores and v[-2] == scores[-1]
    return scores == [*scores[:-2], q[-2], k[-1]] and p == scores and v[-2] == k[-1]


def find_unfused(trace: Trace, excluded: np.ndarray) -> list[UnfusedAttention]:
    """Hand-written attention chains in the window; `excluded[i]` marks events inside an
    SDPA or native-MHA call (their products are that call's math backend)."""
    is_op = trace.mask(Cat.CPU_OP)
    names = MATMUL_OPS | SOFTMAX_OPS
    interesting = np.isin(trace.name_id, trace.name_ids_matching(names.__contains__)) & is_op
    if not interesting.any():
        return []
    outermost = ancestor_of_kind(trace, is_op, outermost=True)
    top = np.flatnonzero(is_op & (outermost == np.arange(len(trace))) & ~excluded)
    top = top[in_window(trace, trace.ts[top])]
    if not len(top):
        return []
    scope_kind = trace.mask(Cat.CPU_OP, Cat.USER_ANNOTATION) | _module_events(trace)
    parent = trace.parent
    scopes = ancestor_of_kind(trace, scope_kind, outermost=False)
    scope_of = np.where(parent[top] >= 0, scopes[np.maximum(parent[top], 0)], -1)
    # sequences of top-level ops by (thread, scope), each in time order, in the order their
    # first op comes in (thread, time); only a sequence holding a softmax can hold a chain,
    # so the others are never turned into Python lists
    order = np.lexsort((trace.ts[top], trace.lane[top]))
    seqs, lanes, scope_of = top[order], trace.lane[top[order]], scope_of[order]
    grouped = np.lexsort((scope_of, lanes))  # stable: time order within a group
    key_lane, key_scope = lanes[grouped], scope_of[grouped]
    cut = np.flatnonzero(
        np.concatenate(
            ([True], (key_lane[1:] != key_lane[:-1]) | (key_scope[1:] != key_scope[:-1]))
        )
    )
    ends = np.append(cut[1:], len(grouped))
    softmax = np.isin(trace.name_id[seqs], trace.name_ids_matching(SOFTMAX_OPS.__contains__))
    holds = np.add.reduceat(softmax[grouped], cut) > 0 if len(cut) else np.zeros(0, bool)
    firsts = grouped[cut]  # each group's first position in (thread, time) order
    found = []
    for g in np.flatnonzero(holds)[np.argsort(firsts[holds], kind="stable")].tolist():
        members = seqs[grouped[cut[g] : ends[g]]].tolist()
        found.extend(_chains(trace, int(key_scope[cut[g]]), members))
    return found


def _module_events(trace: Trace) -> np.ndarray:
    """Python events of nn.Module forwards (with_stack traces): a module is a scope."""
    ids = trace.name_ids_matching(lambda n: n.startswith("nn.Module:"))
    return np.isin(trace.name_id, ids) & trace.mask(Cat.PYTHON)


def _chains(trace: Trace, scope: int, seq: list[int]) -> list[UnfusedAttention]:
    names = [trace.name(i) for i in seq]
    out = []
    for pos, name in enumerate(names):
        if name not in SOFTMAX_OPS:
            continue
        before = _nearest(names, range(pos - 1, max(pos - 1 - MAX_BETWEEN, -1), -1))
        after = _nearest(names, range(pos + 1, min(pos + 1 + MAX_BETWEEN, len(names))))
        if before is None or after is None:
            continue
        first, softmax, second = seq[before], seq[pos], seq[after]
        shaped = _shaped(trace, first, softmax, second)
        if shaped is False:
            continue
        dropout = any(n in DROPOUT_OPS for n in names[pos + 1 : after])
        out.append(
            UnfusedAttention(
                scope, first, softmax, second, tuple(seq[before : after + 1]), dropout, shaped
            )
        )
    return out


def _nearest(names: list[str], positions: range) -> int | None:
    """First position holding a product; None when a softmax (another chain) comes first."""
    for p in positions:
        if names[p] in MATMUL_OPS:
            return p
        if names[p] in SOFTMAX_OPS:
            return None
    return None
