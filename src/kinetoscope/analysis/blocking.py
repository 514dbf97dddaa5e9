"""Runtime calls during which the host thread waited for the device.

A host thread waits for the device inside any runtime or driver call that
cannot return before device work has completed, whatever the call is named.
Three kinds of evidence say so, from the API's contract to the trace's timing:

1. the call is a synchronization: `cudaDeviceSynchronize`,
   `cudaStreamSynchronize`, `cudaEventSynchronize` and their driver and HIP
   twins (any `*Synchronize`);
2. the call is a copy CUDA documents as synchronous ("API synchronization
   behavior"): a copy without the `Async` suffix (`cudaMemcpy`, `hipMemcpy`,
   `hipMemcpyWithStream`, `cuMemcpyDtoH`), or any copy from device to
   *pageable* host memory, which "returns only once the copy has completed"
   even when called as `cudaMemcpyAsync` (the profiler names the copy
   `Memcpy DtoH (Device -> Pageable)`). This is how `.item()`, `.cpu()`,
   `.tolist()`, `nonzero` and boolean-mask indexing block on CUDA: PyTorch
   copies into a pageable host buffer, then synchronizes the stream;
3. the timing shows it: the call lasted much longer than a launch
   (`LONG_FACTOR` x the trace's median launch call), the device was still
   working on work queued before the call when it began, and the call returned
   within `WAKE_US` after the moment the last work queued before it or by it
   (on the stream it enqueued to, or on any stream for a call that enqueued
   nothing) finished. A slow launch returns while that work still runs (its
   own kernel, which it enqueues only at its end after lazy module loading, or
   behind a full launch queue), or began while the device was idle, so it is
   not counted. This catches
   blocking calls of any name: a pageable host-to-device copy that had to wait
   for its stream, an implicitly synchronizing `cudaFree`.

Wait time is the call's whole duration: from its start the thread can do
nothing else until the device lets it go.
"""

from __future__ import annotations

import re

import numpy as np

from ..trace import Cat, Trace

#: "Much longer than a launch": a waiting call lasted at least this many median launches.
LONG_FACTOR = 10.0
#: Floor of "much longer than a launch" (us), for traces whose launches are unusually fast.
LONG_FLOOR_US = 20.0
#: How long after the device's last queued work ends a blocked thread returns (us): a
#: spinning or yielding thread sees completion within microseconds, and CUPTI aligns the
#: device timestamps to the host clock to within a few. The corpus's synchronize calls
#: return 4-14 us after the work they waited for (`python bench/host_account.py --gaps`,
#: docs/accuracy.md); calls that merely ran while the device worked (cudaMalloc,
#: launches behind a full queue) end tens to hundreds of us off.
WAKE_US = 20.0
#: How far device timestamps may sit after the host's for one instant (us): a call that
#: waited returned after the work ended; work ending later ran after the call let go
#: (a lazily loaded kernel launched at the end of its slow launch call).
CLOCK_US = 2.0

_SYNC_RE = re.compile(r"Synchronize")
_SYNC_COPY_RE = re.compile(r"[Mm]emcpy(?!.*Async)")


def named_blocking(name: str) -> bool:
    """A call the API documents as blocking: a synchronize, or a copy without `Async`."""
    return bool(_SYNC_RE.search(name) or _SYNC_COPY_RE.search(name))


def is_pageable_dtoh(name: str) -> bool:
    """A device copy into pageable host memory (`Memcpy DtoH (Device -> Pageable)`)."""
    return "DtoH" in name and "Pageable" in name


def blocking_calls(trace: Trace) -> np.ndarray:
    """Host runtime/driver calls that waited for the device, in time order."""
    return trace.memo(_blocking)


def _blocking(trace: Trace) -> np.ndarray:
    calls = np.flatnonzero(trace.mask(Cat.RUNTIME, Cat.DRIVER) & trace.host_tree_mask)
    if not len(calls):
        return np.zeros(0, dtype=np.int64)
    blocking = np.isin(trace.name_id[calls], trace.name_ids_matching(named_blocking))
    blocking |= np.isin(calls, pageable_dtoh_launchers(trace))
    blocking |= np.isin(calls, _waited_by_timing(trace, calls[~blocking]))
    out = calls[blocking]
    out = out[np.argsort(trace.ts[out], kind="stable")]
    out.setflags(write=False)
    return out


def pageable_dtoh_launchers(trace: Trace) -> np.ndarray:
    """Host calls that enqueued a copy into pageable host memory (they block: point 2)."""
    copies = np.flatnonzero(trace.device_work & trace.mask(Cat.MEMCPY))
    copies = copies[np.isin(trace.name_id[copies], trace.name_ids_matching(is_pageable_dtoh))]
    launchers = trace.launch_of[copies]
    return launchers[launchers >= 0]


def long_call_us(trace: Trace) -> float:
    """What "much longer than a launch" means in this trace (us)."""
    launches = trace.launches
    median = float(np.median(trace.dur[launches])) if len(launches) else 0.0
    return max(LONG_FACTOR * median, LONG_FLOOR_US)


def _waited_by_timing(trace: Trace, calls: np.ndarray) -> np.ndarray:
    """The calls among `calls` whose timing shows a wait (module docstring, point 3)."""
    calls = calls[trace.dur[calls] >= long_call_us(trace)]
    work = np.flatnonzero(trace.device_work & (trace.launch_of >= 0))
    if not len(calls) or not len(work):
        return np.zeros(0, dtype=np.int64)
    launcher, lanes = trace.launch_of[work], trace.lane[work]
    streams = np.unique(lanes)
    # the (candidate, stream) pairs to test: the streams a candidate enqueued to (only its
    # own work is looked at), every stream for a candidate that enqueued nothing
    own = np.isin(launcher, calls)
    orphans = calls[~np.isin(calls, launcher[own])]
    pair_call = np.concatenate((launcher[own], np.repeat(orphans, len(streams))))
    pair_lane = np.concatenate((lanes[own], np.tile(streams, len(orphans))))
    hit = np.zeros(len(pair_call), dtype=bool)
    for lane in streams.tolist():
        # per stream: when each piece of device work was queued (its launch call's start),
        # in that order, and the latest end of the work queued so far
        mine = work[lanes == lane]
        queued = trace.ts[trace.launch_of[mine]]
        order = np.argsort(queued, kind="stable")
        queued, last_end = queued[order], np.maximum.accumulate(trace.end[mine][order])
        sel = np.flatnonzero(pair_lane == lane)
        start, end = trace.ts[pair_call[sel]], trace.end[pair_call[sel]]
        before = np.searchsorted(queued, start, side="left")  # queued before it
        upto = np.searchsorted(queued, start, side="right")  # ... and by it
        busy = (before > 0) & (start < last_end[np.maximum(before - 1, 0)])
        slack = end - last_end[np.maximum(upto - 1, 0)]
        hit[sel] = busy & (slack >= -CLOCK_US) & (slack <= WAKE_US)
    return calls[np.isin(calls, pair_call[hit])]
