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

A site is named by the call that held the host longest, not the last one: in
`.item()` the `cudaMemcpyAsync` into pageable memory returns only once the copy
and everything queued before it on the stream have finished, so it holds the
wait (33 ms behind a vLLM sampler's kernels) and the `cudaStreamSynchronize`
after it finds the stream drained (31 us). `pageable_copy` says when the holder
is such a copy: its fix is a pinned destination and non_blocking=True, not the
removal of a synchronize.

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
from .blocking import blocking_calls, pageable_dtoh_launchers
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
    call: str  # the blocking call that held the host longest, e.g. cudaStreamSynchronize
    calls: tuple[int, ...]  # event indices of the blocking calls in the site
    context: int  # innermost enclosing op that is not itself part of the site (-1 if none)
    frame: int  # innermost enclosing python_function event (-1 without with_stack)
    step: int | None
    wait_us: float  # host time blocked: summed duration of the blocking calls
    #: the holder (`call`) launched a device-to-pageable copy (`Memcpy DtoH (Device ->
    #: Pageable)`): a copy that blocks until it and all earlier work on its stream finish
    pageable_copy: bool = False

    @property
    def held_by(self) -> str:
        """The holding call as a reader should see it: `cudaMemcpyAsync (device-to-pageable
        copy)` where the copy, not a synchronize, held the host."""
        return f"{self.call} (device-to-pageable copy)" if self.pageable_copy else self.call


#: What a device-to-pageable copy costs and how to avoid the wait, for rules and renderers.
PAGEABLE_COPY_ADVICE = (
    "device-to-pageable copy: blocks until the copy and all earlier work on the stream "
    "finish; pin the destination (pin_memory) and use non_blocking=True, then wait on an "
    "event only where the values are read, so the host enqueues the next work first"
)


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
    pageable = set(pageable_dtoh_launchers(trace).tolist())
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
        # the longest call held the wait; ties go to the later one (the synchronize)
        holder = max(reversed(calls), key=lambda c: float(trace.dur[c]))
        sites.append(
            SyncSite(
                index=root,
                kind=_kind(trace, root, calls),
                call=trace.name(holder),
                calls=tuple(calls),
                context=_enclosing(trace, root, (Cat.CPU_OP, Cat.USER_ANNOTATION)),
                frame=_enclosing(trace, root, (Cat.PYTHON,)),
                step=step,
                wait_us=float(trace.dur[calls].sum()),
                pageable_copy=holder in pageable,
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
