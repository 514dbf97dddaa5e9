"""Which events belong to the active window (the profiled steps).

Device work belongs to the step whose host window contains its launch call, as
in `step_stats`; host events belong to a step when they start inside it.
Without `ProfilerStep#N` the window is the whole trace.
"""

from __future__ import annotations

import numpy as np

from ..trace import Trace
from ..trace.tree import EVENT_BLOCK
from .intervals import merge
from .steps import device_anchor, windows


def in_window(trace: Trace, times: np.ndarray, index: np.ndarray | None = None) -> np.ndarray:
    """Mask: which of `times` (or of `times[index]`, gathered a block at a time: no
    per-event copy of a column) fall inside one of the step windows."""
    count = len(times) if index is None else len(index)
    if not trace.steps:
        return np.ones(count, dtype=bool)
    # the union of the windows, then one binary search per time: a loop over the
    # steps cost O(steps x events), 0.5 s per call at 415 steps and 3.8 M events
    bounds = np.array([(start, end) for _, _, start, end in windows(trace)], dtype=float)
    bounds = bounds[~np.isnan(bounds).any(axis=1)]  # a NaN window holds no time
    starts, ends = merge(bounds[:, 0], bounds[:, 1])
    hit = np.empty(count, dtype=bool)
    # in blocks: the search's int64 slots and gathered ends would otherwise be three
    # temporaries of 8 bytes per time, the largest peak of `explain` on a big trace
    for lo in range(0, count, EVENT_BLOCK):
        stop = lo + EVENT_BLOCK
        block = times[lo:stop] if index is None else times[index[lo:stop]]
        slot = np.searchsorted(starts, block, side="right") - 1  # last window starting <= t
        inside = slot >= 0
        inside[inside] = block[inside] < ends[slot[inside]]
        hit[lo:stop] = inside
    return hit


def window_kernels(trace: Trace) -> np.ndarray:
    """Kernel indices (time order) launched inside the active window."""
    kernels = trace.kernels
    return kernels[in_window(trace, device_anchor(trace), kernels)]


def window_device_work(trace: Trace) -> np.ndarray:
    """Kernels, copies and memsets launched inside the active window."""
    work = np.flatnonzero(trace.device_work)
    return work[in_window(trace, device_anchor(trace), work)]


def window_launches(trace: Trace) -> np.ndarray:
    launches = trace.launches
    return launches[in_window(trace, trace.ts, launches)]


def time_by_name(trace: Trace, indices: np.ndarray, weights: np.ndarray) -> list[tuple[str, float]]:
    """(name, summed weight) for the given events, largest first."""
    if not len(indices):
        return []
    totals = np.bincount(trace.name_id[indices], weights=weights, minlength=len(trace.names))
    order = np.argsort(-totals, kind="stable")
    return [(trace.names[i], float(totals[i])) for i in order if totals[i] > 0]
