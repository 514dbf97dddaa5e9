"""Mixture-of-experts layers written with aten ops, read from their recorded shapes.

An eager MoE layer (Switch Transformer, HF Mixtral/Qwen-MoE, a tutorial) runs,
on one thread, in this order:

1. a gate: a linear from the hidden size H to E outputs, one per expert, then a
   softmax or sigmoid over those E scores and `aten::topk` over the same last
   dimension (either order of the two);
2. the experts: for each expert a chain of linears that starts from H (up and
   gate projections [F, H]) and ends back at H (down projection [H, F]), all
   experts with the same weight shapes;
3. between and after them, the ops that gather each expert's tokens and put
   the results back (index, where, index_add_, scatter...).

With record_shapes the first linear of each expert says how many rows that
expert computed. If every one of the E experts ran on all T tokens the gate
scored (T: the topk input's leading dimensions), dispatch is dense: the gate
only weights or masks the results. If the experts' rows differ and add up to
T x k (k: topk's k, recorded or implied), dispatch is sparse: each expert saw
only its routed tokens, and those rows are its load. Anything else (rows that
fit neither, fewer than two experts) is not called an MoE layer: a sampler's
topk over a vocabulary has a linear and a softmax before it, but no experts
after it.

Not seen here: capacity-limited routing that drops tokens (rows add up to less
than T x k), experts run as one batched matmul over [E, C, H], a shared expert
with the routed experts' shape (it counts as one more expert).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..trace import Cat, Trace
from .ancestry import ancestor_of_kind
from .recorded_args import numel, recorded_args
from .window import in_window

LINEAR_OPS = frozenset({"aten::linear", "aten::addmm", "aten::mm", "aten::matmul"})
GATING_OPS = frozenset({"aten::softmax", "aten::_softmax", "aten::sigmoid", "aten::log_softmax"})
#: Ops that move tokens to their expert and back: gathers, scatters, sorts, index-adds.
PERMUTE_OPS = frozenset(
    {
        "aten::argsort",
        "aten::sort",
        "aten::index",
        "aten::index_select",
        "aten::gather",
        "aten::scatter",
        "aten::scatter_add",
        "aten::scatter_add_",
        "aten::index_add",
        "aten::index_add_",
        "aten::index_put_",
        "aten::index_copy_",
        "aten::nonzero",
        "aten::where",
        "aten::masked_select",
        "aten::repeat_interleave",
    }
)
#: Ops a gate may hold between its linear and its topk (a cast, a bias, a view).
MAX_GATE_OPS = 8
#: Ops after the last expert searched for the combine (an index_add_, a scatter).
MAX_COMBINE_OPS = 8


@dataclass(frozen=True)
class Linear:
    rows: int
    inner: int
    out: int


@dataclass(frozen=True)
class MoeLayer:
    """One MoE layer seen in aten ops, with each op's role (event indices)."""

    lane: int
    start: float  # the gate linear's start
    tokens: int  # T: rows the gate scored
    experts: int  # E: the gate's outputs
    top_k: int | None
    hidden: int
    #: rows of each expert that ran, in run order (first linear of each expert)
    rows: tuple[int, ...]
    dispatch: str  # "dense" or "sparse"
    routing: tuple[int, ...]
    permutation: tuple[int, ...]
    expert_gemms: tuple[int, ...]
    other: tuple[int, ...]

    @property
    def loads(self) -> tuple[int, ...]:
        """Tokens per expert, the experts that never ran counted as 0 (sparse only)."""
        return self.rows + (0,) * max(self.experts - len(self.rows), 0)

    @property
    def imbalance(self) -> float | None:
        """Largest load over the mean load (1.0: perfectly even); None for dense."""
        if self.dispatch != "sparse" or not sum(self.rows):
            return None
        return max(self.rows) / (sum(self.rows) / self.experts)


def linear_shape(trace: Trace, index: int) -> Linear | None:
    """(rows, in, out) of a linear-like op with a 2-D weight, from its recorded shapes."""
    a = recorded_args(trace, index)
    name = trace.name(index)
    if name == "aten::linear":
        x, w = a.shape(0), a.shape(1)
        if x and w and len(w) == 2 and x[-1] == w[1]:
            return Linear(numel(x[:-1]), w[1], w[0])
    elif name == "aten::addmm":
        x, w = a.shape(1), a.shape(2)
        if x and w and len(x) == 2 and len(w) == 2:
            return Linear(x[0], x[1], w[1])
    elif name in ("aten::mm", "aten::matmul"):
        x, w = a.shape(0), a.shape(1)
        if x and w and len(w) == 2 and x[-1] == w[0]:
            return Linear(numel(x[:-1]), w[0], w[1])
    return None


def _sequences(trace: Trace) -> list[list[int]]:
    """Outermost ops in the window, one time-ordered list per thread that holds a topk."""
    is_op = trace.mask(Cat.CPU_OP)
    topk = np.isin(trace.name_id, trace.name_ids_matching("aten::topk".__eq__)) & is_op
    if not topk.any():
        return []
    outermost = ancestor_of_kind(trace, is_op, outermost=True)
    top = np.flatnonzero(is_op & (outermost == np.arange(len(trace))))
    top = top[in_window(trace, trace.ts[top])]
    lanes = set(trace.lane[top[topk[top]]].tolist())
    out = []
    for lane in sorted(lanes):
        seq = top[trace.lane[top] == lane]
        out.append(seq[np.argsort(trace.ts[seq], kind="stable")].tolist())
    return out


def find_layers(trace: Trace) -> list[MoeLayer]:
    """Every MoE layer in the window, in (thread, time) order."""
    found = []
    for seq in _sequences(trace):
        names = [trace.name(i) for i in seq]
        for pos, name in enumerate(names):
            if name == "aten::topk":
                layer = _layer_at(trace, seq, names, pos)
                if layer is not None:
                    found.append(layer)
    return found


def _gate(trace: Trace, seq: list[int], names: list[str], pos: int, experts: int):
    """Position and shape of the gate linear before the topk at `pos`, or None."""
    for p in range(pos - 1, max(pos - 1 - MAX_GATE_OPS, -1), -1):
        if names[p] == "aten::topk":
            return None
        if names[p] in LINEAR_OPS:
            lin = linear_shape(trace, seq[p])
            return (p, lin) if lin is not None and lin.out == experts else None
    return None


def _layer_at(trace: Trace, seq: list[int], names: list[str], pos: int) -> MoeLayer | None:
    args = recorded_args(trace, seq[pos])
    scores = args.shape(0)
    if not scores or len(scores) < 2 or scores[-1] < 2:
        return None
    experts, tokens = scores[-1], numel(scores[:-1])
    gate = _gate(trace, seq, names, pos, experts)
    if gate is None:
        return None
    g, lin = gate
    gated = any(n in GATING_OPS for n in names[g + 1 : pos + 4])
    if not gated or lin.rows != tokens:
        return None
    k = args.scalar(1)
    k = k if isinstance(k, int) and k > 0 else None
    chain = _experts(trace, seq, names, pos, lin.inner, experts)
    if chain is None:
        return None
    starts, gemms, end = chain
    rows = tuple(linear_shape(trace, seq[p]).rows for p in starts)  # type: ignore[union-attr]
    dispatch = _dispatch(rows, tokens, experts, k)
    if dispatch is None:
        return None
    if dispatch == "sparse" and k is None:
        k = sum(rows) // tokens
    first = starts[0]
    routing = [seq[p] for p in range(g, first) if p <= pos or names[p] not in PERMUTE_OPS]
    tail = range(end + 1, min(end + 1 + MAX_COMBINE_OPS, len(seq)))
    combine = [p for p in tail if names[p] in PERMUTE_OPS]
    inside = range(pos + 1, end + 1)
    permutation = [seq[p] for p in inside if names[p] in PERMUTE_OPS] + [seq[p] for p in combine]
    gemm_set = set(gemms)
    other = [
        seq[p] for p in range(first, end + 1) if p not in gemm_set and names[p] not in PERMUTE_OPS
    ]
    return MoeLayer(
        lane=int(trace.lane[seq[pos]]),
        start=float(trace.ts[seq[g]]),
        tokens=tokens,
        experts=experts,
        top_k=k,
        hidden=lin.inner,
        rows=rows,
        dispatch=dispatch,
        routing=tuple(routing),
        permutation=tuple(permutation),
        expert_gemms=tuple(seq[p] for p in gemms),
        other=tuple(other),
    )


def _experts(trace, seq, names, pos, hidden, experts):
    """(first linear of each expert, every expert linear, last expert position) after the
    topk at `pos`, or None. An expert starts at a linear from `hidden` (after the topk
    or after the previous expert's down projection back to `hidden`); every expert's
    first linear has the same weight shape; the scan stops at another topk, at a linear
    from `hidden` with another shape, or after the E-th expert's down projection."""
    starts: list[int] = []
    gemms: list[int] = []
    shape = None
    down = True  # the next linear from `hidden` starts an expert
    for p in range(pos + 1, len(seq)):
        if names[p] == "aten::topk":
            break
        if names[p] not in LINEAR_OPS:
            continue
        lin = linear_shape(trace, seq[p])
        if lin is None:
            break
        if lin.inner == hidden:
            if shape is None:
                shape = (lin.inner, lin.out)
            elif (lin.inner, lin.out) != shape:
                break
            if down:
                if len(starts) == experts:
                    break
                starts.append(p)
                down = False
        elif shape is None:
            break
        elif lin.out == hidden:
            down = True
        gemms.append(p)
    if len(starts) < 2 or not down:
        return None
    return starts, gemms, gemms[-1]


def _dispatch(rows: tuple[int, ...], tokens: int, experts: int, k: int | None) -> str | None:
    """ "dense" when all E experts ran on all T tokens; "sparse" when their rows add up to
    T x k (k recorded, or the whole multiple the rows imply, 1 <= k <= E)."""
    if len(rows) == experts and all(r == tokens for r in rows):
        return "dense"
    total = sum(rows)
    if k is not None:
        return "sparse" if total == tokens * k else None
    implied, rest = divmod(total, tokens)
    return "sparse" if not rest and 1 <= implied <= experts else None
