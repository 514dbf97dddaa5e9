"""Interval arithmetic on numpy arrays: busy time is the length of a union."""

from __future__ import annotations

import numpy as np

from ..trace.tree import EVENT_BLOCK


def merge(starts: np.ndarray, ends: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Union of intervals as sorted, disjoint (starts, ends).

    After sorting by start, the running maximum of the ends never decreases, so
    a run's end is the running maximum at its last interval: no scatter needed,
    and the temporaries are released as soon as they are used (this runs on
    every host event of the window: its peak is the out-of-core path's). Starts
    already in order (`Trace.by_start`) skip the sort and its two copies."""
    if len(starts) == 0:
        return np.zeros(0), np.zeros(0)
    if (starts[1:] >= starts[:-1]).all():  # in start order (a NaN fails the test)
        s, e = starts, ends.copy()
    else:
        order = np.argsort(starts, kind="stable")
        s = starts[order]
        e = ends[order]
        del order
    np.maximum.accumulate(e, out=e)
    # a new run begins where the start is past every end before it
    new = np.empty(len(s), dtype=bool)
    new[0] = True
    np.greater(s[1:], e[:-1], out=new[1:])
    first = np.flatnonzero(new)
    del new
    last = np.empty(len(first), dtype=np.intp)
    last[:-1] = first[1:] - 1
    last[-1] = len(s) - 1
    return s[first], e[last]


def merge_indexed(
    starts: np.ndarray, ends: np.ndarray, index: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """`merge(starts[index], ends[index])`, gathered and merged a block of `index` at
    a time: the union of the blocks' unions is the same union (the same runs, the same
    float ends), and only one block's copies exist at once. Whole, the gathered columns
    and the merge's copies were 33 bytes per host event: the peak of `explain` at 5 GB."""
    if len(index) <= EVENT_BLOCK:
        return merge(starts[index], ends[index])
    blocks = (index[lo : lo + EVENT_BLOCK] for lo in range(0, len(index), EVENT_BLOCK))
    parts = [merge(starts[block], ends[block]) for block in blocks]
    return merge(np.concatenate([s for s, _ in parts]), np.concatenate([e for _, e in parts]))


def union_length(starts: np.ndarray, ends: np.ndarray) -> float:
    s, e = merge(starts, ends)
    return float((e - s).sum())


def clip(starts: np.ndarray, ends: np.ndarray, lo: float, hi: float):
    """Intervals cut to [lo, hi]; empty ones dropped."""
    s = np.maximum(starts, lo)
    e = np.minimum(ends, hi)
    keep = e > s
    return s[keep], e[keep]


def clip_merged(starts: np.ndarray, ends: np.ndarray, lo: float, hi: float):
    """`clip` of sorted disjoint intervals (both columns ascending, as `merge` returns
    them): only the ones that can overlap [lo, hi] are cut, two binary searches instead of
    a pass over all of them."""
    first = np.searchsorted(ends, lo, side="right")
    stop = np.searchsorted(starts, hi, side="left")
    return clip(starts[first:stop], ends[first:stop], lo, hi)


def gaps(starts: np.ndarray, ends: np.ndarray, lo: float, hi: float):
    """The idle intervals inside [lo, hi] not covered by the union of the given ones."""
    s, e = merge(*clip(starts, ends, lo, hi))
    gap_s = np.concatenate(([lo], e))
    gap_e = np.concatenate((s, [hi]))
    keep = gap_e > gap_s
    return gap_s[keep], gap_e[keep]
