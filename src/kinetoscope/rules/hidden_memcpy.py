"""hidden-memcpy: device copies an operator made on the user's behalf.

A copy under `aten::copy_` or `.to()` is one the user wrote; a copy under
`aten::addmm` (the bias seeded into the output), indexing or masking is not,
and it costs device time the user cannot see in their code.
"""

from __future__ import annotations

from collections import defaultdict

import numpy as np

from ..analysis.ancestry import ancestor_of_kind
from ..analysis.stepmap import step_count
from ..analysis.steps import device_anchor
from ..analysis.window import in_window
from ..formatting.units import count, fmt_bytes, fmt_us
from ..trace import Cat, Trace
from ..trace.sparse import values_at
from ..trace.steps import STEP_RE
from .base import Evidence, Finding, rule
from .requires import need_device

#: Ops whose whole job is a copy: a memcpy under them is one the user asked for,
#: unless an op above them asked for it on the user's behalf.
COPY_OPS = frozenset(
    {
        "aten::copy_",
        "aten::_copy_from",
        "aten::_copy_from_and_resize",
        "aten::to",
        "aten::_to_copy",
        "aten::clone",
        "aten::contiguous",
        "aten::_foreach_copy_",
        "aten::item",
        "aten::_local_scalar_dense",
    }
)


def _requesting_ops(trace: Trace, ops: np.ndarray) -> np.ndarray:
    """Per op in `ops` (all >= 0): the first op at or above it that is not a copy op, -1 when
    the copy is the user's own (that op is a user annotation, a step, or there is none).
    One tree pass for all copies (`ancestor_of_kind`), not a walk per copy."""
    not_copy = ~np.isin(trace.name_id, trace.name_ids_matching(COPY_OPS.__contains__))
    owner = ancestor_of_kind(trace, not_copy, outermost=False)[ops]
    safe = np.maximum(owner, 0)
    steps = np.isin(trace.name_id[safe], trace.name_ids_matching(lambda n: bool(STEP_RE.match(n))))
    return np.where((owner >= 0) & (trace.cat[safe] == int(Cat.CPU_OP)) & ~steps, owner, -1)


@rule(
    "hidden-memcpy",
    "cpu-lane",
    "device copies issued inside an op that is not itself a copy",
)
def hidden_memcpy(ctx) -> list[Finding]:
    trace = ctx.trace
    need_device(trace)
    copies = np.flatnonzero(trace.mask(Cat.MEMCPY) & (trace.lane_kind == 2))
    copies = copies[in_window(trace, device_anchor(trace)[copies])]
    groups: dict[tuple[str, str], list[int]] = defaultdict(list)
    copies = copies[trace.op_of[copies] >= 0]
    owners = _requesting_ops(trace, trace.op_of[copies])
    for i, owner in zip(copies.tolist(), owners.tolist(), strict=True):
        if owner >= 0:
            kind = trace.name(i).split(" (")[0]
            groups[(trace.name(owner), kind)].append(i)
    if not groups:
        return []
    steps = step_count(trace)
    total = sum(float(trace.dur[idx].sum()) for idx in groups.values())
    evidence = []
    ranked = sorted(groups.items(), key=lambda kv: -float(trace.dur[kv[1]].sum()))
    for (owner, kind), idx in ranked[:6]:
        first = idx[0]
        nbytes = sum(values_at(trace.copy_bytes, idx))
        size = f" ({fmt_bytes(nbytes)})" if nbytes else ""
        evidence.append(
            Evidence(
                f"{len(idx)} x {kind}{size} issued by {owner}, "
                f"{fmt_us(float(trace.dur[idx].sum()))} of device time",
                name=trace.name(first),
                ts_us=trace.rel(trace.ts[first]),
                dur_us=float(trace.dur[first]),
                value=float(trace.dur[idx].sum()),
                unit="us",
            )
        )
    owners = sorted({owner for owner, _ in groups})
    return [
        Finding(
            id="hidden-memcpy",
            severity="info",
            title=(
                f"Hidden copies: {count(sum(len(v) for v in groups.values()), 'device copy')} "
                f"issued inside {', '.join(owners[:3])}{' and others' if len(owners) > 3 else ''}"
            ),
            explanation=(
                "These copies were not written as copies: an operator made them on your "
                "behalf (aten::addmm seeds its output with the bias before the GEMM, "
                "indexing and masking ops clone their input, .item() reads a value back)."
            ),
            suggestion=(
                "Usually fine; if the copies cost real time, look for an in-place or fused "
                "variant of the op, avoid materialising broadcast operands, or keep tensors "
                "contiguous."
            ),
            impact_us=total / steps,
            evidence=evidence,
            measured={
                "copies": sum(len(v) for v in groups.values()),
                "device_time_us": round(total, 3),
            },
        )
    ]
