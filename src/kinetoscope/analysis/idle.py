"""Why each device stream sits idle: HolisticTraceAnalysis's idle-time breakdown.

HTA (`BreakdownAnalysis.get_idle_time_breakdown`) looks at consecutive device
events (kernels, memcpys, memsets) on one stream. The gap before an event is
- host wait: the host call that enqueued it started after the previous event
  had finished, so the host was late feeding the stream;
- kernel wait: otherwise, a gap shorter than `kernel_gap_us` (HTA's
  `consecutive_kernel_delay`, 30 in the trace's microseconds), the launch
  overhead between back-to-back kernels;
- other: the rest, e.g. the stream waiting on an event from another stream.
Events without a launch link (no correlation) cannot be host waits, as in HTA.
Gaps are attributed to the step whose window holds the next event's launch
(the convention of `analysis.steps`), or to no step (None) outside every step.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ..trace import Trace
from .stepmap import step_numbers, step_or_none
from .steps import device_anchor

CATEGORIES = ("host_wait", "kernel_wait", "other")
HTA_KERNEL_GAP_US = 30.0


@dataclass
class IdleSplit:
    """Idle microseconds by category, plus the busy time they sit between."""

    host_wait: float = 0.0
    kernel_wait: float = 0.0
    other: float = 0.0
    busy: float = 0.0
    gaps: int = 0

    @property
    def idle(self) -> float:
        return self.host_wait + self.kernel_wait + self.other

    def share(self, category: str) -> float:
        """Share of idle time in `category` (HTA's idle_time_ratio)."""
        return getattr(self, category) / self.idle if self.idle > 0 else 0.0

    @property
    def dominant(self) -> str:
        return max(CATEGORIES, key=lambda c: getattr(self, c))

    def add(self, other: IdleSplit) -> None:
        for name in (*CATEGORIES, "busy", "gaps"):
            setattr(self, name, getattr(self, name) + getattr(other, name))


@dataclass
class StreamIdle:
    lane: int  # index into trace.lanes
    label: str
    total: IdleSplit
    by_step: dict[int | None, IdleSplit] = field(default_factory=dict)
    longest_gap: tuple[float, float, str] | None = None  # (start, dur, category)


def idle_breakdown(trace: Trace, kernel_gap_us: float = HTA_KERNEL_GAP_US) -> list[StreamIdle]:
    """Per device stream, the HTA split of idle time, in total and per step."""
    work = np.flatnonzero(trace.device_work)
    if not len(work):
        return []
    launch = trace.launch_of
    anchor = device_anchor(trace)
    out = []
    for lane_id in np.unique(trace.lane[work]):
        ev = work[trace.lane[work] == lane_id]
        ev = ev[np.argsort(trace.ts[ev], kind="stable")]
        ends = trace.end[ev]
        gap = trace.ts[ev[1:]] - ends[:-1]
        nxt = ev[1:]
        launched = launch[nxt] >= 0
        host_late = launched & (trace.ts[np.where(launched, launch[nxt], 0)] > ends[:-1])
        category = np.where(host_late, 0, np.where(gap < kernel_gap_us, 1, 2))
        step_of = step_numbers(trace, anchor[nxt])
        busy_step = step_numbers(trace, anchor[ev])
        stream = StreamIdle(int(lane_id), trace.lanes[int(lane_id)].label, IdleSplit())
        for number in dict.fromkeys(busy_step.tolist()):
            sel = busy_step == number
            split = stream.by_step.setdefault(step_or_none(number), IdleSplit())
            split.busy = float(trace.dur[ev[sel]].sum())
        for code, name in enumerate(CATEGORIES):
            for number in dict.fromkeys(step_of[category == code].tolist()):
                sel = (category == code) & (step_of == number)
                split = stream.by_step.setdefault(step_or_none(number), IdleSplit())
                setattr(split, name, float(gap[sel].sum()))
                split.gaps += int(sel.sum())
        for split in stream.by_step.values():
            stream.total.add(split)
        if len(gap):
            k = int(np.argmax(gap))
            stream.longest_gap = (float(ends[k]), float(gap[k]), CATEGORIES[int(category[k])])
        out.append(stream)
    return out
