"""The lines view: source lines ranked by the window time each one holds, split by the
window account's classes (`analysis.account`).

Every instant of the window belongs to one account class. An instant the device runs
is owed to the line that launched the work running then (the host is ahead of the
device or waiting on it, so the line the host is at is not the one the device works
for); on a trace without device work the CPU's arithmetic plays the device and lies
on the host's timeline. Every other instant (Python, dispatch, a wait, a data wait,
one-time work) is owed to the line the host is at (`source_lines`). Per line the
classes therefore add up to the window time it holds, and the lines' times add up to
at most the window: the rest (`unattributed`) is time no user frame was open, or
device time whose launch no line holds. Kernels that overlap on several streams are
given to the one that started first, so nothing is counted twice.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..trace import Cat, Trace
from .account import sets
from .account.account import window_account
from .source_lines import RECORD_HINT, Line, line_timeline, lines_of
from .syncs import sync_sites

#: The view's columns: account classes, the two kinds of wait joined (JSON keys).
COLUMNS = ("device", "python", "dispatch", "waits", "data", "one_time")
#: Which account classes each column reads.
CLASSES = {
    "device": ("device",),
    "python": ("python",),
    "dispatch": ("dispatch",),
    "waits": ("sync_stall", "external"),
    "data": ("data",),
    "one_time": ("one_time",),
}


@dataclass(frozen=True)
class LineRow:
    line: Line
    calls: int
    us: dict[str, float]
    launches: int
    syncs: int
    copies: int

    @property
    def total_us(self) -> float:
        return sum(self.us.values())


@dataclass(frozen=True)
class LinesView:
    has_stacks: bool
    all_frames: bool
    window_us: float
    on_cpu: bool
    rows: list[LineRow]  # ranked by total time held
    #: per column, the window time in that class no line holds
    unattributed_us: dict[str, float]


def lines_view(trace: Trace, all_frames: bool = False) -> LinesView:
    return trace.memo(_lines_view, all_frames)


def _lines_view(trace: Trace, all_frames: bool) -> LinesView:
    account = window_account(trace)
    timeline = line_timeline(trace, all_frames)
    n = len(timeline.lines)
    held = {c: np.zeros(n) for c in COLUMNS}
    totals = {c: sum(account.us(k) for k in CLASSES[c]) for c in COLUMNS}
    for column in COLUMNS:
        for cls in CLASSES[column]:
            part = account.parts[cls]
            if cls == "device" and not account.on_cpu:
                held[column] += _device_by_line(trace, part, all_frames, n)
            elif n and len(timeline.start):
                got = sets.covered_between(part, timeline.start, timeline.end)
                held[column] += np.bincount(timeline.line, weights=got, minlength=n)
    launches = _count(trace, trace.launches, all_frames, n)
    copies = _count(
        trace, np.flatnonzero(trace.mask(Cat.MEMCPY) & (trace.lane_kind == 2)), all_frames, n
    )
    sites = np.array([s.index for s in sync_sites(trace)], dtype=np.int64)
    syncs = _count(trace, sites, all_frames, n)
    rows = [
        LineRow(
            timeline.lines[k],
            int(timeline.calls[k]),
            {c: float(held[c][k]) for c in COLUMNS},
            int(launches[k]),
            int(syncs[k]),
            int(copies[k]),
        )
        for k in range(n)
    ]
    rows = [r for r in rows if r.total_us > 0 or r.launches or r.syncs or r.copies]
    rows.sort(key=lambda r: (-r.total_us, r.line.label))
    unattributed = {c: max(totals[c] - float(held[c].sum()), 0.0) for c in COLUMNS}
    return LinesView(
        timeline.has_stacks, all_frames, account.window_us, account.on_cpu, rows, unattributed
    )


def _device_by_line(trace: Trace, device: sets.Set, all_frames: bool, n: int) -> np.ndarray:
    """Device time (inside the account's device class) per launching line; work that
    overlaps on several streams goes to the piece that started first."""
    work = trace.by_start(trace.device_work)
    if not n or not len(work):
        return np.zeros(n)
    start, end = trace.ts[work], trace.end[work]
    before = np.maximum.accumulate(np.concatenate(([-np.inf], end[:-1])))
    own_start = np.maximum(start, before)  # what earlier work did not already cover
    got = sets.covered_between(device, own_start, np.maximum(end, own_start))
    line = lines_of(trace, work, all_frames)
    mine = line >= 0
    return np.bincount(line[mine], weights=got[mine], minlength=n)


def _count(trace: Trace, events: np.ndarray, all_frames: bool, n: int) -> np.ndarray:
    line = lines_of(trace, events, all_frames)
    return np.bincount(line[line >= 0], minlength=n) if n else np.zeros(0, np.int64)


def hint(view: LinesView) -> str | None:
    """The one line to say where the view cannot be drawn."""
    return None if view.has_stacks else RECORD_HINT
