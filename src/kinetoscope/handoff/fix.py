"""What the hand-off changes in a trace so that Perfetto keeps every slice.

Three changes, each the least that works, each said in the event's args:

- device work (kernel, copy, memset) that starts before the runtime call that launched
  it (same correlation id) is a clock skew between the host and the device timestamps:
  it cannot run before it is launched. It is moved to start at its launch, its duration
  kept (`kinetoscope_clamped_us` says by how much);
- a complete slice that overlaps one on its track partially moves to a sub-track (a new
  tid on the same pid, named "<track> (overlap N)", `layout.lanes`); its duration and
  start stay;
- flow arrow ends (`s`/`t`/`f`) that were on a moved or clamped slice follow it, so the
  launch -> kernel arrows still bind.

Nothing is dropped and no other event is touched.
"""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass, field

import numpy as np

from .layout import lanes, to_ns
from .read import DEVICE, LAUNCH, Events

_FLOW_PH = frozenset({"s", "t", "f"})
_TID_LIMIT = 1 << 31  # Perfetto reads tids as 32-bit: new ones stay below


@dataclass
class Fixes:
    """Changes to event k: `ts[k]` (new start, us), `tid[k]` (new tid), per event index."""

    ts: dict[int, float] = field(default_factory=dict)
    ts_int: dict[int, bool] = field(default_factory=dict)  # the new ts is a JSON integer
    clamped_us: dict[int, float] = field(default_factory=dict)
    tid: dict[int, int] = field(default_factory=dict)
    #: (pid, new tid) -> the sub-track's name
    sub_tracks: dict[tuple, str] = field(default_factory=dict)
    #: track name -> slices moved off it
    moved: Counter = field(default_factory=Counter)
    flows: int = 0  # flow ends moved with their slice

    def changed(self, k: int) -> bool:
        return k in self.ts or k in self.tid


def plan_fixes(events: Events) -> Fixes:
    fixes = Fixes()
    ts, dur = events.arrays()
    ts_int, dur_int = events.exact()
    _clamp(events, ts, ts_int, fixes)
    start_us = ts.copy()
    start_int = ts_int.copy()
    for k, new in fixes.ts.items():
        start_us[k], start_int[k] = new, fixes.ts_int[k]
    slices = [k for k, ph in enumerate(events.ph) if ph == "X" and not math.isnan(ts[k])]
    tracks: dict[tuple, list[int]] = {}
    for k in slices:
        tracks.setdefault((events.pid[k], events.tid[k]), []).append(k)
    names = thread_names(events)
    new_tid = _tid_allocator(events)
    for key, members in tracks.items():
        idx = np.asarray(members)
        lane = lanes(to_ns(start_us[idx], start_int[idx]), to_ns(dur[idx], dur_int[idx]))
        if not lane.any():
            continue
        name = names.get(key, f"thread {key[1]}")
        tids = {n: new_tid() for n in range(1, int(lane.max()) + 1)}
        for n, tid in tids.items():
            fixes.sub_tracks[(key[0], tid)] = f"{name} (overlap {n})"
        for k, n in zip(members, lane.tolist(), strict=True):
            if n:
                fixes.tid[k] = tids[n]
        fixes.moved[name] += int((lane > 0).sum())
    _follow_flows(events, ts, dur, fixes)
    return fixes


def _clamp(events: Events, ts: np.ndarray, ts_int: np.ndarray, fixes: Fixes) -> None:
    """Device work starting before its launch starts at the launch instead."""
    launched: dict[int, int] = {}  # correlation -> the launch
    for k, kind in enumerate(events.kind):
        if kind == LAUNCH and events.corr[k] >= 0 and not math.isnan(ts[k]):
            launched.setdefault(events.corr[k], k)
    if not launched:
        return
    ns = to_ns(np.nan_to_num(ts), ts_int)
    for k, kind in enumerate(events.kind):
        if kind != DEVICE or events.ph[k] != "X" or math.isnan(ts[k]):
            continue
        j = launched.get(events.corr[k])
        if j is not None and ns[j] > ns[k]:
            at = ts[j]
            fixes.ts[k], fixes.ts_int[k] = float(at), bool(ts_int[j])
            fixes.clamped_us[k] = float(at - ts[k])


def _follow_flows(events: Events, ts: np.ndarray, dur: np.ndarray, fixes: Fixes) -> None:
    """A flow end binds to the deepest slice open at its time on its track: where that
    slice moved, the end moves with it."""
    if not fixes.ts and not fixes.tid:
        return
    starts: dict[tuple, tuple[float, int]] = {}  # (pid, tid, ns) -> (dur, the slice)
    start_ns = to_ns(np.nan_to_num(ts), events.exact()[0]).tolist()
    for k, ph in enumerate(events.ph):
        if ph == "X" and not math.isnan(ts[k]):
            key = (events.pid[k], events.tid[k], start_ns[k])
            if key not in starts or dur[k] < starts[key][0]:
                starts[key] = (dur[k], k)
    for k, ph in enumerate(events.ph):
        if ph not in _FLOW_PH or math.isnan(ts[k]):
            continue
        hit = starts.get((events.pid[k], events.tid[k], start_ns[k]))
        if hit is None or not fixes.changed(hit[1]):
            continue
        target = hit[1]
        if target in fixes.ts:
            fixes.ts[k], fixes.ts_int[k] = fixes.ts[target], fixes.ts_int[target]
        if target in fixes.tid:
            fixes.tid[k] = fixes.tid[target]
        fixes.flows += 1


def thread_names(events: Events) -> dict[tuple, str]:
    """(pid, tid) -> the name its `thread_name` metadata gives."""
    names = {}
    for k, ph in enumerate(events.ph):
        if ph == "M" and events.name[k] == "thread_name" and isinstance(events.meta_name[k], str):
            names[(events.pid[k], events.tid[k])] = events.meta_name[k].strip()
    return names


def _tid_allocator(events: Events):
    """New tids: integers no event uses, above the trace's own (below 2^31)."""
    used = set(events.tid)
    ints = [t for t in used if isinstance(t, int) and 0 <= t < _TID_LIMIT // 2]
    state = {"next": max(ints, default=0) + 1}

    def new() -> int:
        while state["next"] in used:
            state["next"] += 1
        used.add(state["next"])
        return state["next"]

    return new
