"""Measurements on the device lanes: launch latency, idle gaps, kernel totals.

Pure functions of a Trace; the rules in `rules/gpu_lane.py` decide what is
worth saying. Device work is placed in the step whose window holds its launch
call, the same convention as `analysis.steps`.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..trace import Trace
from .account import sets
from .intervals import merge
from .stepmap import device_steps
from .steps import windows
from .window import window_kernels

BUFFER_REQUEST = "Activity Buffer Request"
_MIN_GAP_US = 0.01  # below this a "gap" is timestamp rounding, not idle time


def buffer_requests(trace: Trace) -> np.ndarray:
    """Indices of the profiler's own CUPTI buffer refills, in time order."""
    nid = trace.name_index.get(BUFFER_REQUEST)
    if nid is None:
        return np.zeros(0, dtype=np.int64)
    idx = np.flatnonzero((trace.name_id == nid) & ~trace.is_instant)
    return idx[np.argsort(trace.ts[idx], kind="stable")]


@dataclass(frozen=True)
class LaunchLatency:
    """Per launch call: its start -> the start of the first device work it enqueued.

    A graph launch (cudaGraphLaunch/hipGraphLaunch) enqueues many kernels at
    once; only its first kernel measures the launch, the rest wait on each other.
    """

    device: np.ndarray  # first device event of each launch, in launch order
    launch: np.ndarray  # host launch call indices
    latency: np.ndarray  # us
    queue_depth: np.ndarray  # device events launched earlier and not finished at launch time

    def __len__(self) -> int:
        return len(self.device)


def launch_latency(trace: Trace) -> LaunchLatency:
    work = np.flatnonzero(trace.device_work & (trace.launch_of >= 0))
    work = work[np.argsort(trace.ts[work], kind="stable")]
    launch_all = trace.launch_of[work]
    # outstanding at time t = launched before t - finished by t (a finish implies a launch)
    launch_ts_all = np.sort(trace.ts[launch_all])
    ends = np.sort(trace.end[work])
    _, first = np.unique(launch_all, return_index=True)  # earliest device event per launch
    work, launch = work[first], launch_all[first]
    order = np.argsort(trace.ts[launch], kind="stable")
    work, launch = work[order], launch[order]
    launch_ts = trace.ts[launch]
    latency = trace.ts[work] - launch_ts
    depth = np.searchsorted(launch_ts_all, launch_ts, side="left") - np.searchsorted(
        ends, launch_ts, side="right"
    )
    return LaunchLatency(work, launch, latency, np.maximum(depth, 0))


def busy_while_waiting(trace: Trace, lat: LaunchLatency) -> np.ndarray:
    """Per launch, the device's busy time (any stream) between the launch call and the start
    of its work: a kernel that waits behind a full queue waits while the device works."""
    return device_busy_between(trace, trace.ts[lat.launch], trace.ts[lat.device])


def device_busy_between(trace: Trace, start: np.ndarray, until: np.ndarray) -> np.ndarray:
    """Per interval [start, until], the time any device stream was busy in it."""
    work = np.flatnonzero(trace.device_work)
    return sets.covered_between(merge(trace.ts[work], trace.end[work]), start, until)


@dataclass(frozen=True)
class Gap:
    step: int | None
    start: float
    end: float
    before: int  # device event that ends the busy period
    after: int  # device event that starts the next one

    @property
    def dur(self) -> float:
        return self.end - self.start


@dataclass(frozen=True)
class StepGaps:
    """One step's idle gaps, in time order, as arrays: a step of a large trace has
    thousands of short gaps and the rules test them on the arrays; a `Gap` object
    is made only for the few a rule keeps (`gap`)."""

    step: int | None
    start: np.ndarray  # us
    end: np.ndarray
    before: np.ndarray  # device event that ends the busy period
    after: np.ndarray  # device event that starts the next one

    def __len__(self) -> int:
        return len(self.start)

    @property
    def dur(self) -> np.ndarray:
        return self.end - self.start

    def gap(self, k: int) -> Gap:
        return Gap(
            self.step,
            float(self.start[k]),
            float(self.end[k]),
            int(self.before[k]),
            int(self.after[k]),
        )


def kernel_gaps(trace: Trace) -> dict[int | None, StepGaps]:
    """Idle gaps of the whole device (all streams merged) between two pieces of work of one step.

    Busy time is the union over every stream, so a kernel still running on
    another stream (an NCCL collective launched in the previous step) closes a
    gap. A gap belongs to a step when the work on both sides was launched in it.
    Every step window has an entry (empty when it has no gap), in window order.
    """
    work = np.flatnonzero(trace.device_work)
    numbers = [number for number, *_ in windows(trace)]
    if len(work) < 2:
        none, no_event = np.zeros(0), np.zeros(0, np.int64)
        return {n: StepGaps(n, none, none, no_event, no_event) for n in numbers}
    work = work[np.argsort(trace.ts[work], kind="stable")]
    steps = device_steps(trace, work)
    starts, ends = trace.ts[work], trace.end[work]
    run_end = np.maximum.accumulate(ends)
    # the event holding the running maximum end: what the device was busy with before the gap
    holder = np.maximum.accumulate(np.where(ends >= run_end, np.arange(len(work)), 0))
    gap = starts[1:] - run_end[:-1]
    k = np.flatnonzero(gap > _MIN_GAP_US)
    step = steps[k + 1]
    keep = step == steps[holder[k]]
    if trace.steps:
        keep &= step >= 0
    k, step = k[keep], step[keep]
    gap_start, gap_end = run_end[k], starts[k + 1]
    before, after = work[holder[k]], work[k + 1]
    # each step's gaps: one slice of the gaps grouped by step (stable: time order kept)
    by_step = np.argsort(step, kind="stable")
    values, first, counts = np.unique(step[by_step], return_index=True, return_counts=True)
    where = {int(v): (int(f), int(f + c)) for v, f, c in zip(values, first, counts, strict=True)}
    # window steps first, then any other step in order of its first gap
    extra = [int(v) for v in step[np.sort(np.unique(step, return_index=True)[1])]]
    out: dict[int | None, StepGaps] = {}
    for number in numbers + [None if v < 0 else v for v in extra]:
        if number in out:
            continue
        lo, hi = where.get(-1 if number is None else number, (0, 0))
        rows = by_step[lo:hi]
        out[number] = StepGaps(number, gap_start[rows], gap_end[rows], before[rows], after[rows])
    return out


@dataclass(frozen=True)
class KernelTotal:
    """One kernel name's device time in the active window."""

    name_id: int
    device_us: float
    calls: int
    instances: np.ndarray  # its kernel event indices, in time order


def kernel_totals(trace: Trace) -> tuple[list[KernelTotal], float]:
    """Kernels launched in the active window, by name, largest device time first, and the
    summed kernel time they are shares of (streams overlap: this is not busy time)."""
    kernels = window_kernels(trace)
    if not len(kernels):
        return [], 0.0
    ids = trace.name_id[kernels]
    total = np.bincount(ids, weights=trace.dur[kernels], minlength=len(trace.names))
    used = np.unique(ids)
    used = used[np.argsort(-total[used], kind="stable")]
    rows = []
    for i in used.tolist():
        inst = kernels[ids == i]
        rows.append(KernelTotal(i, float(total[i]), len(inst), inst))
    return rows, float(trace.dur[kernels].sum())
