"""Why the device sits idle: the union of its streams, split HTA's way.

A device is idle only when none of its streams is busy: while an NCCL kernel
runs on a side stream, a gap on the compute stream is not idle time.
`device_idle` therefore splits the gaps of the union of every stream's work
(per device), cut to each step window, so that busy + idle is exactly the
window. Each union gap is classified by the device event that ends it, with
HTA's rules below; a gap that no later device event ends (the window's tail)
waits for the host, which enqueued nothing more on any stream.

`idle_breakdown` is HolisticTraceAnalysis's per-stream view, kept for the
evidence (which stream idles, and why) and checked against HTA itself; its
gaps overlap other streams' work, so they are never added up into device idle.

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
from .steps import device_anchor, windows

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


@dataclass
class DeviceIdle:
    """One device's idle time: the gaps of the union of all its streams' work."""

    device: int | None
    window: IdleSplit  # over every step window: busy + idle == the windows' length
    by_step: dict[int | None, IdleSplit] = field(default_factory=dict)
    longest_gap: tuple[float, float, str] | None = None  # (start, dur, category)


def device_idle(trace: Trace, kernel_gap_us: float = HTA_KERNEL_GAP_US) -> list[DeviceIdle]:
    """Per device, busy time (union of its streams) and idle time split by cause, per step
    window and over all of them; empty without device work. Computed once per trace and
    gap (the idle rule and the savings bound both read it); callers must not mutate it."""
    return trace.memo(_device_idle, float(kernel_gap_us))


def _device_idle(trace: Trace, kernel_gap_us: float) -> list[DeviceIdle]:
    work = np.flatnonzero(trace.device_work)
    if not len(work):
        return []
    device_of = np.array([lane.device for lane in trace.lanes], dtype=object)
    devices = device_of[trace.lane[work]]
    return [
        _union_idle(trace, work[devices == dev], dev, kernel_gap_us)
        for dev in dict.fromkeys(devices.tolist())
    ]


def _union_idle(trace: Trace, ev: np.ndarray, device, kernel_gap_us: float) -> DeviceIdle:
    ev = ev[np.argsort(trace.ts[ev], kind="stable")]
    starts, ends = trace.ts[ev], trace.end[ev]
    run_end = np.maximum.accumulate(ends)
    # a union gap opens where an event starts after everything before it has ended
    opens = np.flatnonzero(starts[1:] > run_end[:-1]) + 1
    gap_s = np.concatenate(([-np.inf], run_end[opens - 1], [run_end[-1]]))
    gap_e = np.concatenate(([starts[0]], starts[opens], [np.inf]))
    nxt = np.concatenate(([ev[0]], ev[opens], [-1]))
    launch = trace.launch_of[np.maximum(nxt, 0)]
    launched = (nxt >= 0) & (launch >= 0)
    launch_ts = np.where(launched, trace.ts[np.maximum(launch, 0)], -np.inf)
    # host wait: the host enqueued the next work only after the whole device ran dry (or
    # enqueued none at all); else a short gap is launch overhead, a long one a dependency
    host_late = (nxt < 0) | (launched & (launch_ts > gap_s))
    width = gap_e - gap_s
    category = np.where(host_late, 0, np.where(width < kernel_gap_us, 1, 2))
    busy_s, busy_e = np.concatenate(([starts[0]], starts[opens])), run_end[np.append(opens - 1, -1)]
    out = DeviceIdle(device, IdleSplit())
    longest = None
    for number, _index, lo, hi in windows(trace):
        split = out.by_step[number] = IdleSplit()
        if not (np.isfinite(lo) and np.isfinite(hi)):
            continue  # a window without bounds holds no time
        # intervals and gaps are sorted and disjoint: cut only those overlapping [lo, hi]
        a, b = np.searchsorted(busy_e, lo, "right"), np.searchsorted(busy_s, hi, "left")
        split.busy = float((np.minimum(busy_e[a:b], hi) - np.maximum(busy_s[a:b], lo)).sum())
        a, b = np.searchsorted(gap_e, lo, "right"), np.searchsorted(gap_s, hi, "left")
        cut = (np.minimum(gap_e[a:b], hi) - np.maximum(gap_s[a:b], lo)).clip(0)
        kinds = category[a:b]
        for code, name in enumerate(CATEGORIES):
            setattr(split, name, float(cut[kinds == code].sum()))
        split.gaps = int((cut > 0).sum())
        out.window.add(split)
        if len(cut) and cut.max() > 0 and (longest is None or cut.max() > longest[1]):
            k = a + int(np.argmax(cut))
            longest = (float(max(gap_s[k], lo)), float(cut.max()), CATEGORIES[int(category[k])])
    out.longest_gap = longest
    return out
