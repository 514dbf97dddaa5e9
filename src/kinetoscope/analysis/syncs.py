"""Places where the host blocks until the device catches up.

A sync site is the outermost of: a runtime synchronize call
(`cudaStreamSynchronize`, `cudaDeviceSynchronize`, ...), `aten::item` /
`aten::_local_scalar_dense` (what `.item()`, `bool(tensor)` and printing
call), or the host call that enqueued a device-to-host copy. Nested ones
(`aten::item` -> `_local_scalar_dense` -> `cudaStreamSynchronize`) are one site,
timed by the outermost. The profiler's own flush at the end of the window (a
device synchronize after the last step, or after the last host op when the trace
has no steps) is not a site.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..trace import Cat, Trace
from ..trace.categories import SYNC_NAMES
from .stepmap import step_of

SCALAR_OPS = frozenset({"aten::item", "aten::_local_scalar_dense"})
DEVICE_SYNC_NAMES = frozenset({"cudaDeviceSynchronize", "hipDeviceSynchronize"})


@dataclass(frozen=True)
class SyncSite:
    index: int  # outermost blocking event (host)
    kind: str  # "sync call", "scalar read" or "DtoH copy"
    call: str  # innermost blocking call under it, e.g. cudaStreamSynchronize
    context: int  # innermost enclosing op that is not itself blocking (-1 if none)
    step: int | None
    wait_us: float  # host time blocked: the outermost event's duration


def _dtoh_launches(trace: Trace) -> set[int]:
    """Host calls that enqueued a device-to-host copy."""
    ids = trace.name_ids_matching(lambda n: "DtoH" in n or "Device -> Host" in n)
    copies = np.flatnonzero(
        (trace.cat == int(Cat.MEMCPY)) & np.isin(trace.name_id, ids) & (trace.launch_of >= 0)
    )
    return {int(i) for i in trace.launch_of[copies]}


def _kind(trace: Trace, i: int, dtoh: set[int]) -> str | None:
    name = trace.name(i)
    if name in SYNC_NAMES and trace.cat[i] in (int(Cat.RUNTIME), int(Cat.DRIVER)):
        return "sync call"
    if name in SCALAR_OPS:
        return "scalar read"
    if i in dtoh:
        return "DtoH copy"
    return None


def sync_sites(trace: Trace) -> list[SyncSite]:
    """Blocking sites inside steps (or, without steps, before the final flush)."""
    dtoh = _dtoh_launches(trace)
    ids = trace.name_ids_matching(lambda n: n in SYNC_NAMES or n in SCALAR_OPS)
    cand = np.flatnonzero(np.isin(trace.name_id, ids) & trace.host_tree_mask)
    cand = np.union1d(cand, np.fromiter(dtoh, dtype=np.int64, count=len(dtoh)))
    kinds = {int(i): k for i in cand if (k := _kind(trace, int(i), dtoh))}
    parent = trace.parent
    steps = trace.steps
    last_host_op = _last_op_start_per_lane(trace)
    roots: dict[int, list[int]] = {}
    for i in sorted(kinds, key=lambda j: trace.ts[j]):
        root, p = i, int(parent[i])
        while p >= 0:
            if p in kinds:
                root = p
            p = int(parent[p])
        roots.setdefault(root, []).append(i)
    sites = []
    for root, members in roots.items():
        ts = float(trace.ts[root])
        if steps:
            step = step_of(trace, ts)
            if step is None:
                continue  # outside every step: the profiler's flush or setup
        else:
            step = None
            if trace.name(root) in DEVICE_SYNC_NAMES and ts >= last_host_op.get(
                int(trace.lane[root]), -np.inf
            ):
                continue  # nothing runs after it on its thread: the final flush
        calls = [j for j in members if kinds[j] == "sync call"] or members
        innermost = max(calls, key=lambda j: trace.ts[j])
        context = int(parent[root])
        while context >= 0 and trace.cat[context] not in (
            int(Cat.CPU_OP),
            int(Cat.USER_ANNOTATION),
        ):
            context = int(parent[context])
        sites.append(
            SyncSite(
                index=root,
                kind=kinds[root],
                call=trace.name(innermost),
                context=context,
                step=step,
                wait_us=float(trace.dur[root]),
            )
        )
    return sites


def _last_op_start_per_lane(trace: Trace) -> dict[int, float]:
    """Start of the last cpu_op on each host thread."""
    ops = np.flatnonzero((trace.cat == int(Cat.CPU_OP)) & (trace.lane_kind == 1))
    out: dict[int, float] = {}
    for lane, ts in zip(trace.lane[ops].tolist(), trace.ts[ops].tolist(), strict=True):
        if ts > out.get(lane, -np.inf):
            out[lane] = ts
    return out
