"""Per-step host and device activity: the table every verdict starts from.

Device work belongs to the step that issued it, never to the step whose host
window its device timestamps happen to overlap: the device runs behind the host
(launches are asynchronous), so with a lagging device every kernel of a
3-step window can run after the host has finished all three steps. Each kernel,
copy or memset is therefore placed by its *anchor*:

1. the start of the runtime call that launched it (correlation id / flow), so
   work launched in step N belongs to step N wherever it runs;
2. for device events without a launch link in the trace, the step whose device-side
   `ProfilerStep#N` annotation (`gpu_user_annotation`) contains it: the
   anchor is that step's host start;
3. otherwise its own start.

A step's device busy time is the union of the durations of the device events
attributed to it. It can exceed the step's host duration when the device lags
(the step's work takes longer on the device than the host took to issue it):
`device_ratio` = device busy / step duration then reads above 100%, which
says the device, not the host, sets the pace. Traces without
`ProfilerStep#N` get one pseudo-step spanning the whole trace, which owns all
device work.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..trace import Cat, Trace
from ..trace.steps import STEP_RE
from .intervals import clip_merged, merge, union_length


@dataclass(frozen=True)
class StepStats:
    number: int | None  # None for the whole-trace pseudo-step
    index: int  # event index of the ProfilerStep (-1 for the pseudo-step)
    start: float
    end: float
    host_busy_us: float
    device_busy_us: float  # union of the device work attributed to the step
    kernels: int
    launches: int
    device_events: int
    #: first start to last end of the device work attributed to the step (0 without any)
    device_span_us: float = 0.0

    @property
    def dur(self) -> float:
        return self.end - self.start

    @property
    def label(self) -> str:
        return f"#{self.number}" if self.number is not None else "whole trace"

    @property
    def time_us(self) -> float:
        """The step's time: its host window, or the device's busy time for the work it
        launched where that is longer. The host can queue a step's kernels faster than
        the device runs them (a compute-bound run: 134 us of host window, 214 us of GEMM
        per step on an H100); then the device's time is the step's, and the host's window
        alone would make a run look faster than it can go."""
        return max(self.dur, self.device_busy_us)

    @property
    def host_ratio(self) -> float:
        return self.host_busy_us / self.dur if self.dur > 0 else 0.0

    @property
    def device_ratio(self) -> float:
        """Device busy / step duration; above 1 when the device lags behind the host."""
        return self.device_busy_us / self.dur if self.dur > 0 else 0.0


def host_activity_mask(trace: Trace) -> np.ndarray:
    """Host events that count as the host being busy: ops, annotations and runtime
    calls on host threads, but not the ProfilerStep spans themselves."""
    step_names = trace.name_ids_matching(lambda n: bool(STEP_RE.match(n)))
    return (
        trace.mask(Cat.CPU_OP, Cat.USER_ANNOTATION, Cat.RUNTIME, Cat.DRIVER)
        & ~trace.is_instant
        & (trace.lane_kind == 1)
        & ~np.isin(trace.name_id, step_names)
    )


def device_anchor(trace: Trace) -> np.ndarray:
    """Timestamp used to place each event in a step (see the module docstring):
    its launch's start when linked, else the host start of the step whose
    device-side annotation contains it, else its own start."""
    return trace.memo(_anchor)


def _anchor(trace: Trace) -> np.ndarray:
    launch = trace.launch_of
    anchor = trace.ts.copy()
    linked = launch >= 0
    anchor[linked] = trace.ts[launch[linked]]
    annotated = [s for s in trace.steps if s.device_start is not None]
    if annotated:
        loose = np.flatnonzero(~linked & (trace.lane_kind == 2))
        ts = trace.ts[loose]
        for s in annotated:
            inside = (ts >= s.device_start) & (ts < s.device_end)
            anchor[loose[inside]] = s.start
    anchor.setflags(write=False)
    return anchor


def windows(trace: Trace) -> list[tuple[int | None, int, float, float]]:
    """(step number, event index, start, end) for each step, or one for the whole trace."""
    if trace.steps:
        return [(s.number, s.index, s.start, s.end) for s in trace.steps]
    return [(None, -1, trace.start_time, trace.end_time)]


def step_stats(trace: Trace) -> list[StepStats]:
    return trace.memo(_step_stats)


def _step_stats(trace: Trace) -> list[StepStats]:
    host = np.flatnonzero(host_activity_mask(trace))
    # host busy time in a window is the union cut to the window: merge once, then
    # each step only cuts the few merged intervals it overlaps
    host_s, host_e = merge(trace.ts[host], trace.end[host])
    work = np.flatnonzero(trace.device_work)
    anchor = device_anchor(trace)[work]
    # device events in anchor order: a step's work is one slice [first, stop)
    by_anchor = np.argsort(anchor, kind="stable")
    work, anchor = work[by_anchor], anchor[by_anchor]
    is_kernel = trace.cat[work] == int(Cat.KERNEL)
    kernels_before = np.concatenate(([0], np.cumsum(is_kernel)))
    launch_ts = np.sort(trace.ts[trace.launches])
    out = []
    whole = not trace.steps
    for number, index, start, end in windows(trace):
        hs, he = clip_merged(host_s, host_e, start, end)
        first, stop = (0, len(work)) if whole else np.searchsorted(anchor, [start, end])
        mine = work[first:stop]
        out.append(
            StepStats(
                number=number,
                index=index,
                start=start,
                end=end,
                host_busy_us=union_length(hs, he),
                device_busy_us=union_length(trace.ts[mine], trace.end[mine]),
                kernels=int(kernels_before[stop] - kernels_before[first]),
                launches=int(np.diff(np.searchsorted(launch_ts, [start, end]))[0]),
                device_events=int(stop - first),
                device_span_us=(
                    float(trace.end[mine].max() - trace.ts[mine].min()) if len(mine) else 0.0
                ),
            )
        )
    return out
