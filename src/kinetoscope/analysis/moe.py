"""The mixture-of-experts view: routing, permutation, expert GEMMs, dispatch/combine.

Two kinds of evidence find an MoE layer, and each part's time is added up from
whichever the trace holds:

- aten ops with recorded shapes (`moe_layers`): the gate, the experts and the
  token moves of an eager layer, and from the experts' rows whether dispatch is
  dense or sparse and how evenly the tokens spread over the experts;
- kernel and op names of MoE libraries (`moe_names`): fused routing, permutation
  and grouped-GEMM kernels, DeepEP's dispatch/combine, and the kernels an op that
  holds a whole fused layer (`vllm::moe_forward`) launches. A fused layer keeps
  each expert's token count inside its kernels: the trace shows none, and the view
  says so rather than guess a load.

Each part gets the device time of its kernels (launched by its ops, or named for
it) and the host time of its outermost ops, with their share of the window's
kernel time and of the window. A trace with neither kind of evidence has no view;
an all-to-all alone is not evidence (sequence parallelism uses one too).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

import numpy as np

from ..trace import Cat, Trace
from .ancestry import ancestor_of_kind
from .kernel_types import kernel_type_in
from .moe_layers import MoeLayer, find_layers
from .moe_names import (
    ALL_TO_ALL,
    DISPATCH,
    EXPERT_GEMM,
    FUSED,
    OTHER,
    PARTS,
    PERMUTATION,
    ROUTING,
    is_moe_scope,
    part_of_name,
)
from .steps import windows
from .window import in_window, time_by_name, window_kernels

#: Names listed as evidence per part.
MAX_NAMES = 3


@dataclass
class MoePart:
    part: str
    kernels: int = 0
    device_us: float = 0.0
    ops: int = 0
    host_us: float = 0.0
    #: (name, us) of the part's largest kernels by device time, or where it launched none
    #: its largest ops by host time; largest first
    names: list[tuple[str, float]] = field(default_factory=list)


@dataclass(frozen=True)
class MoeView:
    layers: list[MoeLayer]
    parts: list[MoePart]
    #: kernel time in the window and the window's length: the shares' denominators
    device_total_us: float
    window_us: float
    #: "dense", "sparse", "dense and sparse" or "sparse (fused)"; None when unknown
    dispatch: str | None
    #: why the dispatch is what it says (shapes, or fused kernel names)
    dispatch_evidence: str
    #: True where per-expert loads are hidden inside fused kernels
    fused: bool
    scope_ops: list[str]


def _name_codes(trace: Trace) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per interned name: its part's index in PARTS (-1: none), whether it is an
    all-to-all (a dispatch/combine only beside other MoE evidence), whether it is an
    op holding a whole fused layer."""
    n = len(trace.names)
    part = np.full(n, -1, dtype=np.int8)
    a2a = np.zeros(n, dtype=bool)
    scope = np.zeros(n, dtype=bool)
    for nid, name in enumerate(trace.names):
        p = part_of_name(name)
        if p is not None:
            part[nid] = PARTS.index(p)
        a2a[nid] = ALL_TO_ALL.search(name) is not None
        scope[nid] = is_moe_scope(name)
    return part, a2a, scope


def _lookup(keys: np.ndarray, values: np.ndarray, at: np.ndarray) -> np.ndarray:
    """values[k] where keys[k] == at (keys sorted), else -1."""
    out = np.full(len(at), -1, dtype=np.int8)
    if not len(keys) or not len(at):
        return out
    pos = np.minimum(np.searchsorted(keys, at), len(keys) - 1)
    hit = keys[pos] == at
    out[hit] = values[pos[hit]]
    return out


def _layer_codes(layers: list[MoeLayer]) -> tuple[np.ndarray, np.ndarray]:
    """(op event indices, sorted; their part codes) of the layers' ops."""
    roles = {}
    for layer in layers:
        for part, ops in (
            (ROUTING, layer.routing),
            (PERMUTATION, layer.permutation),
            (EXPERT_GEMM, layer.expert_gemms),
            (OTHER, layer.other),
        ):
            roles.update(dict.fromkeys(ops, PARTS.index(part)))
    keys = np.array(sorted(roles), dtype=np.int64)
    return keys, np.array([roles[k] for k in keys.tolist()], dtype=np.int8)


def moe_view(trace: Trace) -> MoeView | None:
    """The MoE view of the window, None when the trace shows no MoE layer."""
    name_part, a2a, scope = trace.memo(_name_codes)
    layers = find_layers(trace)
    if not layers and not (name_part >= 0).any() and not scope.any():
        return None  # no MoE op or kernel name anywhere (an all-to-all alone is none)
    keys, values = _layer_codes(layers)
    by_name = np.where(name_part >= 0, name_part, np.where(a2a, PARTS.index(DISPATCH), -1))
    by_name = by_name.astype(np.int8)
    is_op = trace.mask(Cat.CPU_OP)
    outermost = ancestor_of_kind(trace, is_op, outermost=True)
    top = np.flatnonzero(is_op & (outermost == np.arange(len(trace))))
    top = top[in_window(trace, trace.ts[top])]
    # host: each outermost op's role in a layer, else its name's part, else a fused layer
    top_code = _lookup(keys, values, top)
    named = top_code < 0
    top_code[named] = by_name[trace.name_id[top[named]]]
    fused_op = (top_code < 0) & scope[trace.name_id[top]]
    top_code[fused_op] = PARTS.index(FUSED)
    # device: a kernel's own name, else the part of the op (or outermost op) launching it
    kernels = window_kernels(trace)
    code = by_name[trace.name_id[kernels]]
    op = trace.op_of[kernels].astype(np.int64)
    open_ = (code < 0) & (op >= 0)
    inner = op[open_]
    outer = outermost[inner].astype(np.int64)
    via = name_part[trace.name_id[inner]]
    via = np.where(via >= 0, via, _lookup(keys, values, outer))
    via = np.where(via >= 0, via, by_name[trace.name_id[outer]])
    in_scope = (via < 0) & scope[trace.name_id[outer]]
    if in_scope.any():
        gemm = {
            int(nid): kernel_type_in(trace, trace.names[nid]) == "gemm"
            for nid in np.unique(trace.name_id[kernels[open_][in_scope]]).tolist()
        }
        is_gemm = np.array([gemm[int(n)] for n in trace.name_id[kernels[open_][in_scope]]])
        via[in_scope] = np.where(is_gemm, PARTS.index(EXPERT_GEMM), PARTS.index(OTHER))
    code[open_] = via
    if not layers and not _evidence(trace, top, top_code, kernels, code, a2a):
        return None
    parts = []
    for k, name in enumerate(PARTS):
        ops, ks = top[top_code == k], kernels[code == k]
        if not len(ops) and not len(ks):
            continue
        chosen = ks if len(ks) else ops  # kernels by device time, else ops by host time
        parts.append(
            MoePart(
                name,
                kernels=len(ks),
                device_us=float(trace.dur[ks].sum()),
                ops=len(ops),
                host_us=float(trace.dur[ops].sum()),
                names=time_by_name(trace, chosen, trace.dur[chosen])[:MAX_NAMES],
            )
        )
    in_scope_ops = np.unique(trace.name_id[top[fused_op]]).tolist()
    window = sum(max(end - start, 0.0) for _, _, start, end in windows(trace))
    seen = np.unique(np.concatenate([trace.name_id[kernels], trace.name_id[top]]))
    dispatch, why, fused = _dispatch(trace, layers, seen, name_part, bool(in_scope_ops))
    return MoeView(
        layers=layers,
        parts=parts,
        device_total_us=float(trace.dur[kernels].sum()) if len(kernels) else 0.0,
        window_us=float(window),
        dispatch=dispatch,
        dispatch_evidence=why,
        fused=fused,
        scope_ops=sorted(trace.names[n] for n in in_scope_ops),
    )


def _evidence(trace, top, top_code, kernels, code, a2a) -> bool:
    """Whether anything in the window with a part got it from more than an all-to-all name."""
    for events, codes in ((top, top_code), (kernels, code)):
        placed = events[codes >= 0]
        if len(placed) and not a2a[trace.name_id[placed]].all():
            return True
    return False


def _dispatch(trace: Trace, layers, seen: np.ndarray, name_part: np.ndarray, scopes: bool):
    """(dispatch, its evidence, fused) from the layers' shapes, else from fused names."""
    kinds = sorted({layer.dispatch for layer in layers})
    if kinds:
        dense = [layer for layer in layers if layer.dispatch == "dense"]
        sparse = [layer for layer in layers if layer.dispatch == "sparse"]
        why = []
        if dense:
            d = dense[0]
            why.append(
                f"{len(dense)} layer(s) ran all {d.experts} experts on all {d.tokens:,} tokens "
                f"(each expert's first linear has {d.tokens:,} rows, the gate's topk input "
                f"{d.tokens:,} x {d.experts})"
            )
        if sparse:
            s = sparse[0]
            why.append(
                f"{len(sparse)} layer(s) fed each expert only its routed tokens (expert rows "
                f"{', '.join(map(str, s.rows))} add up to {s.tokens:,} tokens x k={s.top_k})"
            )
        return " and ".join(kinds), "; ".join(why), False
    ids = seen[name_part[seen] == PARTS.index(ROUTING)].tolist()
    routing = sorted({_qualified(trace.names[n]) for n in ids})
    if routing:
        return (
            "sparse (fused)",
            f"top-k routing kernels ({', '.join(routing[:MAX_NAMES])}) feed fused expert kernels; "
            "per-expert token counts stay inside those kernels",
            True,
        )
    unknown = "no recorded shapes or routing kernels say how tokens reach the experts"
    return None, unknown, scopes


def _qualified(name: str) -> str:
    """`void moe::dev::routing::f<...>(...)` -> `moe::dev::routing::f`: the kernel's name
    without its return type, template arguments and parameters."""
    return re.split(r"[<(]", re.sub(r"^void\s+", "", name), maxsplit=1)[0]
