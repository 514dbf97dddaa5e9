"""Sync sites: where in the program the host blocked on the device.

The blocking calls themselves are found in `analysis.blocking` (synchronize
calls, synchronous copies, copies into pageable host memory, and any call
whose timing shows it waited). A site is the op the user wrote that holds
them: the outermost op of the chain of aten ops enclosing the call
(`aten::item` -> `aten::_local_scalar_dense` -> `cudaMemcpyAsync` (device to
pageable) + `cudaStreamSynchronize` is one site, `aten::item`; `.cpu()` is
`aten::to` -> `_to_copy` -> `copy_` -> the copy; a boolean mask is
`aten::index` -> `aten::nonzero` -> the copy of the count), else the call
itself (`torch.cuda.synchronize()`). The time blocked is the summed duration of
the blocking calls inside it. `.item()` on a CPU tensor (Adam's step counter
without `capturable=True`) runs no runtime call and is no site.

The profiler's own flush at the end of the window (a device synchronize
after the last step, or after the last host op when the trace has no steps)
is not a site: no line of the program is there to change. The host still
waited in it, and the whole-window host-time account (`analysis.hosttime`)
counts that wait.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..trace import Cat, Trace
from .blocking import blocking_calls
from .stepmap import step_of

#: Scalar reads: `.item()`, `bool(tensor)` / `if tensor:`.
SCALAR_OPS = frozenset({"aten::item", "aten::_local_scalar_dense", "aten::is_nonzero"})
DEVICE_SYNC_NAMES = frozenset({"cudaDeviceSynchronize", "hipDeviceSynchronize", "cuCtxSynchronize"})


@dataclass(frozen=True)
class SyncSite:
    index: int  # the site: outermost aten op holding the blocking calls, else the call
    #: "scalar read" (.item(), bool(tensor)), "blocking op" (.cpu(), nonzero, x[mask], ...),
    #: "sync call" (a synchronize), "blocking copy" (a bare copy), "waiting call" (other)
    kind: str
    call: str  # the (last) blocking call, e.g. cudaStreamSynchronize
    calls: tuple[int, ...]  # event indices of the blocking calls in the site
    context: int  # innermost enclosing op that is not itself part of the site (-1 if none)
    frame: int  # innermost enclosing python_function event (-1 without with_stack)
    step: int | None
    wait_us: float  # host time blocked: summed duration of the blocking calls


def sync_sites(trace: Trace) -> list[SyncSite]:
    return trace.memo(_sync_sites)


def _sync_sites(trace: Trace) -> list[SyncSite]:
    """Blocking sites inside steps (or, without steps, before the final flush)."""
    aten = set(trace.name_ids_matching(lambda n: n.startswith("aten::")).tolist())
    parent, op = trace.parent, int(Cat.CPU_OP)
    groups: dict[int, list[int]] = {}
    for call in blocking_calls(trace).tolist():
        root, p = call, int(parent[call])
        while p >= 0 and int(trace.cat[p]) == op and int(trace.name_id[p]) in aten:
            root, p = p, int(parent[p])
        groups.setdefault(root, []).append(call)
    last_host_op = {} if trace.steps else _last_op_start_per_lane(trace)
    sites = []
    for root, calls in groups.items():
        ts = float(trace.ts[root])
        if trace.steps:
            step = step_of(trace, ts)
            if step is None:
                continue  # outside every step: the profiler's flush or setup
        else:
            step = None
            if trace.name(root) in DEVICE_SYNC_NAMES and ts >= last_host_op.get(
                int(trace.lane[root]), -np.inf
            ):
                continue  # nothing runs after it on its thread: the final flush
        sites.append(
            SyncSite(
                index=root,
                kind=_kind(trace, root, calls),
                call=trace.name(calls[-1]),
                calls=tuple(calls),
                context=_enclosing(trace, root, (Cat.CPU_OP, Cat.USER_ANNOTATION)),
                frame=_enclosing(trace, root, (Cat.PYTHON,)),
                step=step,
                wait_us=float(trace.dur[calls].sum()),
            )
        )
    return sites


def _kind(trace: Trace, root: int, calls: list[int]) -> str:
    name = trace.name(root)
    if root not in calls:
        return "scalar read" if name in SCALAR_OPS else "blocking op"
    if "Synchronize" in name:
        return "sync call"
    return "blocking copy" if "emcpy" in name else "waiting call"


def _enclosing(trace: Trace, index: int, cats: tuple[Cat, ...]) -> int:
    """Innermost ancestor of `index` in one of `cats`, -1 if none."""
    codes = {int(c) for c in cats}
    p = int(trace.parent[index])
    while p >= 0 and int(trace.cat[p]) not in codes:
        p = int(trace.parent[p])
    return p


def _last_op_start_per_lane(trace: Trace) -> dict[int, float]:
    """Start of the last cpu_op on each host thread (a thread whose ops all lack a start
    has none). One sort by thread and a maximum per run of equal threads, not a Python
    step per op: a trace without steps can hold millions of ops."""
    ops = np.flatnonzero((trace.cat == int(Cat.CPU_OP)) & (trace.lane_kind == 1))
    ts = trace.ts[ops]
    timed = ~np.isnan(ts)
    lanes, ts = trace.lane[ops][timed], ts[timed]
    if not len(lanes):
        return {}
    order = np.argsort(lanes, kind="stable")
    lanes, ts = lanes[order], ts[order]
    first = np.flatnonzero(np.concatenate(([True], lanes[1:] != lanes[:-1])))
    return dict(zip(lanes[first].tolist(), np.maximum.reduceat(ts, first).tolist(), strict=True))
