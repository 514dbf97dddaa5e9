"""The vectorised host call tree must match the profiler's open-event stack exactly,
also on overhanging, tied, zero-length and NaN intervals."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest

from kinetoscope.trace import tree
from kinetoscope.trace.tree import _EPS, build_parents, minus_children


def stack_parents(trace) -> np.ndarray:
    """The profiler's rule, event by event (`_populate_cpu_children`)."""
    parent = np.full(len(trace.ts), -1, dtype=np.int64)
    idx = np.flatnonzero(trace.host_tree_mask)
    order = idx[np.lexsort((idx, -trace.dur[idx], trace.ts[idx], trace.lane[idx]))]
    stack: list[tuple[int, float]] = []
    current = None
    for i in order.tolist():
        if trace.lane[i] != current:
            stack, current = [], trace.lane[i]
        start, end = trace.ts[i], trace.ts[i] + trace.dur[i]
        while stack and (start >= stack[-1][1] or end > stack[-1][1] + _EPS):
            stack.pop()
        if stack:
            parent[i] = stack[-1][0]
        stack.append((i, end))
    return parent


class FakeTrace(SimpleNamespace):
    """The columns `build_parents` reads."""

    def __len__(self) -> int:
        return len(self.ts)


def random_trace(rng: np.random.Generator, n: int, nan: bool) -> FakeTrace:
    ts = rng.integers(0, n, n).astype(np.float64)  # many equal starts
    dur = rng.choice([0.0, 1.0, 2.0, 5.0, 50.0], n) * rng.integers(1, 4, n)
    dur += rng.choice([0.0, 0.0, 0.0005, 0.002], n)  # overhangs within and beyond _EPS
    if nan:
        dur[rng.integers(0, n, n // 20)] = np.nan
    return FakeTrace(
        ts=ts,
        dur=dur,
        lane=rng.integers(0, 3, n).astype(np.int32),
        host_tree_mask=rng.random(n) < 0.9,
    )


@pytest.mark.parametrize("seed", range(30))
def test_matches_the_stack_on_random_nesting(seed):
    rng = np.random.default_rng(seed)
    trace = random_trace(rng, 400, nan=seed % 3 == 0)
    expected = stack_parents(trace)
    assert np.array_equal(build_parents(trace), expected)
    assert (expected >= 0).sum() > 50  # real nesting was exercised


def test_empty_and_all_roots():
    trace = FakeTrace(
        ts=np.array([0.0, 10.0]),
        dur=np.array([1.0, 1.0]),
        lane=np.zeros(2, np.int32),
        host_tree_mask=np.array([True, True]),
    )
    assert build_parents(trace).tolist() == [-1, -1]
    trace.host_tree_mask = np.zeros(2, bool)
    assert build_parents(trace).tolist() == [-1, -1]


@pytest.mark.parametrize("seed", range(6))
def test_blocked_nesting_test_matches_the_stack(seed, monkeypatch):
    """The nesting test and the self-time subtraction run in blocks of events (their
    temporaries were explain's memory peak): blocks of 7 must give the same tree."""
    monkeypatch.setattr(tree, "EVENT_BLOCK", 7)
    rng = np.random.default_rng(100 + seed)
    trace = random_trace(rng, 400, nan=seed % 2 == 0)
    expected = stack_parents(trace)
    assert np.array_equal(build_parents(trace), expected)
    children = np.flatnonzero(expected >= 0)
    whole = trace.dur.astype(np.float64, copy=True)
    np.subtract.at(whole, expected[children], trace.dur[children])
    assert np.array_equal(minus_children(trace.dur, expected, children), whole, equal_nan=True)
