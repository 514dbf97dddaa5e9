"""The critical path: the chain of work that set the window's length, one piece an instant.

Walk the window backwards from its end. Where a device stream runs, the window waits
for the device work that finishes last among what is running (what it waits on
longest); a kernel runs only after its launch call and its stream's earlier work, so
where the device idles before it, the host that launched it was on the path, and the
account (`account.py`) says what held the host: an op being dispatched, a wait, the
next batch, Python, one-time or profiler work. The pieces the walk meets tile the
window, so the path's durations add up to it.

Each piece names what held the path: the device work finishing last, the outermost op
for dispatch, the blocking call for a wait, the DataLoader fetch for data, the
innermost Python frame or annotation for Python, the cause for one-time and profiler
time. Shortening a piece saves at most its own length (other work may then take its
place on the path): the saving each part shows is an upper bound.

Pieces are columns (class code, holder, start, duration), not objects: a large trace
has a piece per kernel.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ...trace import Trace
from . import sets, sources
from .account import CLASSES, WORDS, window_account

#: At most this many segments go into a report; beyond it, runs of neighbours shorter
#: than window / MAX_SEGMENTS are folded into one (the JSON gives `resolution_us`).
MAX_SEGMENTS = 2000


@dataclass(frozen=True)
class Segment:
    cls: str
    name: str
    start: float  # absolute, like the trace's timestamps
    dur: float
    index: int = -1  # the event holding the path (-1: a cause, or folded pieces)


@dataclass(frozen=True)
class PathPart:
    """One (class, name) on the path, summed: what shortening it could save at most."""

    cls: str
    name: str
    us: float
    segments: int
    first: Segment  # the first segment, to find in Perfetto


@dataclass(frozen=True)
class CriticalPath:
    #: columns, in time order: class code (index into CLASSES), holder (event index, or
    #: -1 - k for `labels[k]`), start (absolute), duration; durations add up to the window
    cls: np.ndarray
    holder: np.ndarray
    start: np.ndarray
    dur: np.ndarray
    labels: list[str]
    window_us: float

    def _name(self, trace: Trace, holder: int) -> str:
        return trace.name(holder) if holder >= 0 else self.labels[-1 - holder]

    def _segment(self, trace: Trace, k: int) -> Segment:
        h = int(self.holder[k])
        name = self._name(trace, h)
        return Segment(CLASSES[self.cls[k]], name, float(self.start[k]), float(self.dur[k]), h)

    def parts(self, trace: Trace, limit: int | None = None) -> list[PathPart]:
        """Path time by (class, name), largest first."""
        if not len(self.dur):
            return []
        # one key per (class, name): event holders by their interned name
        # events by interned name, labels by their own (negative) code
        name_key = np.where(
            self.holder >= 0, trace.name_id[np.maximum(self.holder, 0)], self.holder
        )
        key = self.cls.astype(np.int64) * (len(trace.names) + len(self.labels) + 2) + (
            name_key + len(self.labels) + 1
        )
        uniq, first, inverse = np.unique(key, return_index=True, return_inverse=True)
        total = np.bincount(inverse, weights=self.dur)
        count = np.bincount(inverse)
        order = np.argsort(-total, kind="stable")[:limit]
        out = []
        for u in order.tolist():
            seg = self._segment(trace, int(first[u]))
            out.append(PathPart(seg.cls, seg.name, float(total[u]), int(count[u]), seg))
        return out

    def segments(self, trace: Trace) -> tuple[list[Segment], float]:
        """The path as segments for a report, and the resolution below which neighbours
        were folded (0 when none were): at most about `MAX_SEGMENTS`."""
        if len(self.dur) <= MAX_SEGMENTS:
            return [self._segment(trace, k) for k in range(len(self.dur))], 0.0
        resolution = self.window_us / MAX_SEGMENTS
        out: list[Segment] = []
        short = self.dur < resolution
        k, n = 0, len(self.dur)
        while k < n:
            if not short[k]:
                out.append(self._segment(trace, k))
                k += 1
                continue
            stop = k
            while stop < n and short[stop]:
                stop += 1
            if stop - k == 1:
                out.append(self._segment(trace, k))
            else:
                held = np.bincount(self.cls[k:stop], weights=self.dur[k:stop])
                cls = CLASSES[int(np.argmax(held))]
                dur = float(self.dur[k:stop].sum())
                out.append(Segment(cls, f"{stop - k} short pieces", float(self.start[k]), dur))
            k = stop
        return out, resolution


def critical_path(trace: Trace) -> CriticalPath:
    return trace.memo(_path)


def _path(trace: Trace) -> CriticalPath:
    account = window_account(trace)
    labels: list[str] = []
    cols: list[tuple[np.ndarray, ...]] = []

    def add(cls: str, part, runs=None, fallback: str | None = None) -> None:
        if not len(part[0]):
            return
        label = fallback or WORDS[cls]
        if label not in labels:
            labels.append(label)
        code = -1 - labels.index(label)
        if runs is None:
            holder = np.full(len(part[0]), code, dtype=np.int64)
            cols.append((np.full(len(holder), CLASSES.index(cls)), holder, *part))
            return
        lo, hi, who = _label(part, runs, code)
        cols.append((np.full(len(lo), CLASSES.index(cls)), who, lo, hi))

    device_events = (
        sources.math_events(trace) if account.on_cpu else np.flatnonzero(trace.device_work)
    )
    add("device", account.parts["device"], _holders(trace, device_events, outer=True))
    add("dispatch", account.parts["dispatch"], _holders(trace, sources.op_events(trace), True))
    add("data", account.parts["data"], _holders(trace, sources.data_events(trace), True))
    waits = _holders(trace, sources.wait_events(trace), outer=True)
    add("sync_stall", account.parts["sync_stall"], waits)
    add("external", account.parts["external"], waits)
    add(
        "python",
        account.parts["python"],
        _holders(trace, sources.frame_events(trace), outer=False),
        "Python between ops",
    )
    for cls in ("one_time", "profiler"):
        causes = account.cause_sets[cls]
        left = account.parts[cls]
        for cause, time in causes.items():
            mine = sets.meet(left, time)
            left = sets.minus(left, mine)
            add(cls, mine, fallback=cause)
        add(cls, left)
    add("untraced", account.parts["untraced"], fallback="nothing recorded")
    return _assemble(cols, labels, account.window_us)


def _holders(trace: Trace, idx: np.ndarray, outer: bool):
    """Disjoint runs (start, end, event) during which one of `idx` holds: with `outer`,
    the one finishing last among those running (on one thread, the outermost call);
    otherwise the one that started last (on one thread, the innermost)."""
    idx = np.asarray(idx, dtype=np.int64)
    idx = idx[~np.isnan(trace.ts[idx]) & (trace.dur[idx] > 0)]
    if not len(idx):
        return np.zeros(0), np.zeros(0), np.zeros(0, dtype=np.int64)
    idx = idx[np.argsort(trace.ts[idx], kind="stable")]
    s, e = trace.ts[idx], trace.end[idx]
    if outer:
        # the running maximum of the ends: an event that pushes it holds from its start
        # until it ends or the next such event starts
        best = np.maximum.accumulate(e)
        record = np.ones(len(e), dtype=bool)
        record[1:] = e[1:] > best[:-1]
        idx, s, e = idx[record], s[record], e[record]
    run_end = np.minimum(e, np.append(s[1:], np.inf))
    keep = run_end > s
    return s[keep], run_end[keep], idx[keep]


def _label(part, runs, fallback: int):
    """Cut a class's time at the holder runs' boundaries; each piece gets the run holding
    it (`fallback` where none does), and touching pieces with one holder join."""
    rs, re_, owner = runs
    inner = np.concatenate((rs, re_))
    points = np.unique(np.concatenate((part[0], part[1], inner[sets.inside(part, inner)])))
    lo, hi = points[:-1], points[1:]
    keep = sets.inside(part, lo)
    lo, hi = lo[keep], hi[keep]
    slot = np.searchsorted(rs, lo, side="right") - 1
    held = slot >= 0
    held[held] = lo[held] < re_[slot[held]]
    who = np.full(len(lo), fallback, dtype=np.int64)
    who[held] = owner[slot[held]]
    new = np.ones(len(lo), dtype=bool)
    new[1:] = (lo[1:] != hi[:-1]) | (who[1:] != who[:-1])
    first = np.flatnonzero(new)
    last = np.append(first[1:] - 1, len(lo) - 1) if len(first) else first
    return lo[first], hi[last], who[first]


def _assemble(cols, labels: list[str], window_us: float) -> CriticalPath:
    if not cols:
        empty = np.zeros(0)
        return CriticalPath(
            empty.astype(np.int8), empty.astype(np.int64), empty, empty, labels, window_us
        )
    cls = np.concatenate([c[0] for c in cols]).astype(np.int8)
    holder = np.concatenate([c[1] for c in cols]).astype(np.int64)
    start = np.concatenate([c[2] for c in cols])
    end = np.concatenate([c[3] for c in cols])
    order = np.argsort(start, kind="stable")
    return CriticalPath(
        cls[order], holder[order], start[order], (end - start)[order], labels, window_us
    )
