"""Real host-device syncs: runtime calls during which the host thread blocks on the device.

A sync is a host call that does not return until device work has completed:
`cudaDeviceSynchronize`, `cudaStreamSynchronize`, `cudaEventSynchronize`, a
synchronous `cudaMemcpy` (the driver and HIP equivalents too). Not syncs:
`cudaStreamWaitEvent` (the *device* waits, the host returns at once),
`cudaMemcpyAsync` (what a `non_blocking` copy is; a blocking `.cpu()` shows up
through the `cudaStreamSynchronize` PyTorch issues right after it), and
`aten::item` / `aten::_local_scalar_dense` by themselves: `.item()` on a CPU
tensor (Adam's step counter without `capturable=True`) runs no runtime call
and never waits for a device. A scalar read is a sync site only when it
contains a blocking call, and then it names the site (the op the user wrote).

Sites are grouped by their outermost scalar op (`aten::item` ->
`_local_scalar_dense` -> `cudaMemcpyAsync` + `cudaStreamSynchronize` is one
site); the time blocked is the summed duration of the blocking calls inside
it. The profiler's own flush at the end of the window (a device synchronize
after the last step, or after the last host op when the trace has no steps) is
not a site.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from ..trace import Cat, Trace
from .stepmap import step_of

#: Host runtime/driver calls that block the calling thread until the device is done.
BLOCKING_CALLS = frozenset(
    {
        "cudaDeviceSynchronize",
        "cudaStreamSynchronize",
        "cudaEventSynchronize",
        "cudaMemcpy",
        "cuCtxSynchronize",
        "cuStreamSynchronize",
        "cuEventSynchronize",
        "hipDeviceSynchronize",
        "hipStreamSynchronize",
        "hipEventSynchronize",
        "hipMemcpy",
        # ROCm PyTorch's memcpy_and_sync: one blocking call where CUDA issues
        # cudaMemcpyAsync + cudaStreamSynchronize (a blocking .cpu() / copy_)
        "hipMemcpyWithStream",
    }
)
SCALAR_OPS = frozenset({"aten::item", "aten::_local_scalar_dense"})
DEVICE_SYNC_NAMES = frozenset({"cudaDeviceSynchronize", "hipDeviceSynchronize", "cuCtxSynchronize"})


@dataclass(frozen=True)
class SyncSite:
    index: int  # the site: outermost scalar op holding the blocking calls, else the call
    kind: str  # "scalar read" (.item() and friends) or "sync call"
    call: str  # the (last) blocking call, e.g. cudaStreamSynchronize
    calls: tuple[int, ...]  # event indices of the blocking calls in the site
    context: int  # innermost enclosing op that is not itself part of the site (-1 if none)
    frame: int  # innermost enclosing python_function event (-1 without with_stack)
    step: int | None
    wait_us: float  # host time blocked: summed duration of the blocking calls


def blocking_calls(trace: Trace) -> np.ndarray:
    """Host runtime/driver calls that block on the device, in time order."""
    ids = trace.name_ids_matching(lambda n: n in BLOCKING_CALLS)
    mask = np.isin(trace.name_id, ids) & trace.mask(Cat.RUNTIME, Cat.DRIVER)
    idx = np.flatnonzero(mask & trace.host_tree_mask)
    return idx[np.argsort(trace.ts[idx], kind="stable")]


def sync_sites(trace: Trace) -> list[SyncSite]:
    return _sync_sites_cached(trace)


@lru_cache(maxsize=8)
def _sync_sites_cached(trace: Trace) -> list[SyncSite]:
    """Blocking sites inside steps (or, without steps, before the final flush)."""
    scalar = set(trace.name_ids_matching(lambda n: n in SCALAR_OPS).tolist())
    parent = trace.parent
    groups: dict[int, list[int]] = {}
    for call in blocking_calls(trace).tolist():
        root, p = call, int(parent[call])
        while p >= 0:
            if int(trace.name_id[p]) in scalar:
                root = p
            p = int(parent[p])
        groups.setdefault(root, []).append(call)
    last_host_op = _last_op_start_per_lane(trace)
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
                kind="sync call" if root in calls else "scalar read",
                call=trace.name(calls[-1]),
                calls=tuple(calls),
                context=_enclosing(trace, root, (Cat.CPU_OP, Cat.USER_ANNOTATION)),
                frame=_enclosing(trace, root, (Cat.PYTHON,)),
                step=step,
                wait_us=float(trace.dur[calls].sum()),
            )
        )
    return sites


def _enclosing(trace: Trace, index: int, cats: tuple[Cat, ...]) -> int:
    """Innermost ancestor of `index` in one of `cats`, -1 if none."""
    codes = {int(c) for c in cats}
    p = int(trace.parent[index])
    while p >= 0 and int(trace.cat[p]) not in codes:
        p = int(trace.parent[p])
    return p


def _last_op_start_per_lane(trace: Trace) -> dict[int, float]:
    """Start of the last cpu_op on each host thread."""
    ops = np.flatnonzero((trace.cat == int(Cat.CPU_OP)) & (trace.lane_kind == 1))
    out: dict[int, float] = {}
    for lane, ts in zip(trace.lane[ops].tolist(), trace.ts[ops].tolist(), strict=True):
        if ts > out.get(lane, -np.inf):
            out[lane] = ts
    return out
