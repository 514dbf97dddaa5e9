"""Sets of time as sorted, disjoint intervals: what the window account paints with.

A set is a pair `(starts, ends)` of float arrays, ascending, with no two intervals
overlapping or touching (`analysis.intervals.merge` makes one). The account gives
each instant of the window to one class by precedence: a class gets its own time
minus every class before it, so the operations here are the ones that painting
needs (difference, intersection, length inside a range), each a few vectorised
passes over the boundaries, never a loop over intervals.
"""

from __future__ import annotations

import numpy as np

from ..intervals import merge

Set = tuple[np.ndarray, np.ndarray]

EMPTY: Set = (np.zeros(0), np.zeros(0))


def of(starts: np.ndarray, ends: np.ndarray) -> Set:
    """The union of any intervals (NaN and empty ones dropped) as a set."""
    starts = np.asarray(starts, dtype=np.float64)
    ends = np.asarray(ends, dtype=np.float64)
    keep = (ends > starts) & ~np.isnan(starts) & ~np.isnan(ends)
    return merge(starts[keep], ends[keep])


def union(*sets: Set) -> Set:
    return of(np.concatenate([s for s, _ in sets]), np.concatenate([e for _, e in sets]))


def length(a: Set) -> float:
    return float((a[1] - a[0]).sum())


def inside(a: Set, points: np.ndarray) -> np.ndarray:
    """Which `points` lie inside an interval of `a` (start inclusive, end exclusive)."""
    if not len(a[0]):
        return np.zeros(len(points), dtype=bool)
    slot = np.searchsorted(a[0], points, side="right") - 1
    hit = slot >= 0
    hit[hit] = points[hit] < a[1][slot[hit]]
    return hit


def _pieces(a: Set, b: Set, keep_in_b: bool) -> Set:
    """The parts of `a` inside `b` (`keep_in_b`) or outside it: cut `a` at every boundary
    of `b`, test each piece, join the pieces that touch again."""
    if not len(a[0]):
        return EMPTY
    if not len(b[0]):
        return a if not keep_in_b else EMPTY
    cuts = np.concatenate((b[0], b[1]))
    cuts = cuts[inside(a, cuts)]  # only boundaries of b that fall inside a cut a
    points = np.unique(np.concatenate((a[0], a[1], cuts)))
    lo, hi = points[:-1], points[1:]
    # every instant of [lo, hi) is on the same side of each boundary, so testing lo
    # (half-open intervals) tests the piece; a midpoint can round onto hi
    keep = inside(a, lo) & (inside(b, lo) == keep_in_b)
    return merge(lo[keep], hi[keep])


def minus(a: Set, b: Set) -> Set:
    """The time in `a` and not in `b`."""
    return _pieces(a, b, keep_in_b=False)


def meet(a: Set, b: Set) -> Set:
    """The time in both `a` and `b`."""
    return _pieces(a, b, keep_in_b=True)


def within(a: Set, lo: float, hi: float) -> Set:
    """`a` cut to [lo, hi]."""
    first = np.searchsorted(a[1], lo, side="right")
    stop = np.searchsorted(a[0], hi, side="left")
    s = np.maximum(a[0][first:stop], lo)
    e = np.minimum(a[1][first:stop], hi)
    keep = e > s
    return s[keep], e[keep]


def length_within(a: Set, lo: float, hi: float) -> float:
    return length(within(a, lo, hi))


def covered_between(a: Set, starts: np.ndarray, ends: np.ndarray) -> np.ndarray:
    """For each [start, end], how much of it `a` covers: the covered length up to `end`
    less the covered length up to `start` (one binary search each)."""
    starts = np.asarray(starts, dtype=np.float64)
    ends = np.asarray(ends, dtype=np.float64)
    if not len(a[0]):
        return np.zeros(len(starts))
    done = np.concatenate(([0.0], np.cumsum(a[1] - a[0])))

    def upto(t: np.ndarray) -> np.ndarray:
        k = np.searchsorted(a[0], t, side="right")  # intervals started by t
        last = np.maximum(k - 1, 0)
        partial = np.where(k > 0, np.clip(t - a[0][last], 0.0, a[1][last] - a[0][last]), 0.0)
        return done[last] * (k > 0) + partial

    return np.clip(upto(ends) - upto(starts), 0.0, None)


def paint(window: Set, layers: list[Set]) -> list[Set]:
    """Give each instant of `window` to the first of `layers` that covers it: one sort of
    every boundary inside the window, then one membership test per layer over the pieces
    between boundaries (a piece is wholly inside or outside each layer). Returns a set
    per layer and, last, what no layer covers. The same result as taking each layer's
    `meet` with what the earlier layers left, in one pass instead of two sorts a layer."""
    lo_w, hi_w = (float(window[0][0]), float(window[1][-1])) if len(window[0]) else (0.0, 0.0)
    bounds = [window[0], window[1]]
    for s, e in layers:
        bounds += [s[(s > lo_w) & (s < hi_w)], e[(e > lo_w) & (e < hi_w)]]
    points = np.unique(np.concatenate(bounds))
    if len(points) < 2:
        return [EMPTY for _ in layers] + [EMPTY]
    lo, hi = points[:-1], points[1:]
    owner = np.where(inside(window, lo), len(layers), -1)  # window pieces: "no layer" yet
    for k in range(len(layers) - 1, -1, -1):  # the first layer is written last and wins
        owner[(owner >= 0) & inside(layers[k], lo)] = k
    return [merge(lo[owner == k], hi[owner == k]) for k in range(len(layers) + 1)]
