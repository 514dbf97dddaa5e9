"""Interval arithmetic on numpy arrays: busy time is the length of a union."""

from __future__ import annotations

import numpy as np


def merge(starts: np.ndarray, ends: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Union of intervals as sorted, disjoint (starts, ends)."""
    if len(starts) == 0:
        return np.zeros(0), np.zeros(0)
    order = np.argsort(starts, kind="stable")
    s = starts[order]
    e = np.maximum.accumulate(ends[order])
    # a new run begins where the start is past every end before it
    new = np.ones(len(s), dtype=bool)
    new[1:] = s[1:] > e[:-1]
    run = np.cumsum(new) - 1
    out_s = s[new]
    out_e = np.zeros(len(out_s))
    np.maximum.at(out_e, run, e)
    return out_s, out_e


def union_length(starts: np.ndarray, ends: np.ndarray) -> float:
    s, e = merge(starts, ends)
    return float((e - s).sum())


def clip(starts: np.ndarray, ends: np.ndarray, lo: float, hi: float):
    """Intervals cut to [lo, hi]; empty ones dropped."""
    s = np.maximum(starts, lo)
    e = np.minimum(ends, hi)
    keep = e > s
    return s[keep], e[keep]


def gaps(starts: np.ndarray, ends: np.ndarray, lo: float, hi: float):
    """The idle intervals inside [lo, hi] not covered by the union of the given ones."""
    s, e = merge(*clip(starts, ends, lo, hi))
    gap_s = np.concatenate(([lo], e))
    gap_e = np.concatenate((s, [hi]))
    keep = gap_e > gap_s
    return gap_s[keep], gap_e[keep]
