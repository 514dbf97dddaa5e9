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
from .window import in_window, window_kernels

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


def _names_part(trace: Trace, ids: np.ndarray) -> dict[int, str]:
    """Part per interned name id among `ids` (names of no part left out)."""
    out = {}
    for nid in np.unique(ids).tolist():
        name = trace.names[nid]
        part = part_of_name(name)
        if part is not None:
            out[nid] = part
        elif ALL_TO_ALL.search(name):
            out[nid] = DISPATCH
    return out


def moe_view(trace: Trace) -> MoeView | None:
    """The MoE view of the window, None when the trace shows no MoE layer."""
    layers = find_layers(trace)
    op_part: dict[int, str] = {}
    for layer in layers:
        for part, ops in (
            (ROUTING, layer.routing),
            (PERMUTATION, layer.permutation),
            (EXPERT_GEMM, layer.expert_gemms),
            (OTHER, layer.other),
        ):
            op_part.update(dict.fromkeys(ops, part))
    is_op = trace.mask(Cat.CPU_OP)
    outermost = ancestor_of_kind(trace, is_op, outermost=True)
    top = np.flatnonzero(is_op & (outermost == np.arange(len(trace))))
    top = top[in_window(trace, trace.ts[top])]
    named = _names_part(trace, trace.name_id[top])
    top_ids = np.unique(trace.name_id[top]).tolist()
    scope_ids = {nid for nid in top_ids if is_moe_scope(trace.names[nid])}
    kernels = window_kernels(trace)
    kernel_named = _names_part(trace, trace.name_id[kernels])
    parts = {p: MoePart(p) for p in PARTS}
    seen: dict[str, dict[str, float]] = {p: {} for p in PARTS}
    host_seen: dict[str, dict[str, float]] = {p: {} for p in PARTS}
    # host: outermost ops with a role
    for i in top.tolist():
        nid = int(trace.name_id[i])
        part = op_part.get(i) or named.get(nid) or (FUSED if nid in scope_ids else None)
        if part is None:
            continue
        parts[part].ops += 1
        parts[part].host_us += float(trace.dur[i])
        host_seen[part][trace.names[nid]] = host_seen[part].get(trace.names[nid], 0.0) + float(
            trace.dur[i]
        )
    # device: a kernel's own name, else the role of the op that launched it
    op_of = trace.op_of
    for k in kernels.tolist():
        nid = int(trace.name_id[k])
        part = kernel_named.get(nid)
        if part is None:
            op = int(op_of[k])
            if op < 0:
                continue
            inner = part_of_name(trace.name(op))
            outer = int(outermost[op])
            part = inner or op_part.get(outer) or named.get(int(trace.name_id[outer]))
            if part is None and int(trace.name_id[outer]) in scope_ids:
                gemm = kernel_type_in(trace, trace.names[nid]) == "gemm"
                part = EXPERT_GEMM if gemm else OTHER
            if part is None:
                continue
        dur = float(trace.dur[k])
        parts[part].kernels += 1
        parts[part].device_us += dur
        name = trace.names[nid]
        seen[part][name] = seen[part].get(name, 0.0) + dur
    evidence_names = {n for n, p in named.items() if p != DISPATCH}
    evidence_kernels = {n for n, p in kernel_named.items() if p != DISPATCH}
    deep_ep = any("deep_ep" in trace.names[n] for n in (*named, *kernel_named))
    if not layers and not evidence_names and not evidence_kernels and not scope_ids and not deep_ep:
        return None
    for part in PARTS:
        by_time = seen[part] or host_seen[part]  # kernels where the part has any, else ops
        parts[part].names = sorted(by_time.items(), key=lambda kv: -kv[1])[:MAX_NAMES]
    dispatch, why, fused = _dispatch(trace, layers, {**named, **kernel_named}, scope_ids)
    device_total = float(trace.dur[kernels].sum()) if len(kernels) else 0.0
    window = sum(max(end - start, 0.0) for _, _, start, end in windows(trace))
    return MoeView(
        layers=layers,
        parts=[parts[p] for p in PARTS if parts[p].ops or parts[p].kernels],
        device_total_us=device_total,
        window_us=float(window),
        dispatch=dispatch,
        dispatch_evidence=why,
        fused=fused,
        scope_ops=sorted(trace.names[n] for n in scope_ids),
    )


def _dispatch(trace: Trace, layers, named: dict[int, str], scopes: set[int]):
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
    routing = sorted({_qualified(trace.names[n]) for n, p in named.items() if p == ROUTING})
    if routing:
        return (
            "sparse (fused)",
            f"top-k routing kernels ({', '.join(routing[:MAX_NAMES])}) feed fused expert kernels; "
            "per-expert token counts stay inside those kernels",
            True,
        )
    unknown = "no recorded shapes or routing kernels say how tokens reach the experts"
    return None, unknown, bool(scopes)


def _qualified(name: str) -> str:
    """`void moe::dev::routing::f<...>(...)` -> `moe::dev::routing::f`: the kernel's name
    without its return type, template arguments and parameters."""
    return re.split(r"[<(]", re.sub(r"^void\s+", "", name), maxsplit=1)[0]
