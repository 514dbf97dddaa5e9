"""Analyses that work a block of events at a time (so that their temporaries do not
grow with the trace, docs/benchmarks.md "peak memory") must give what the
whole-array form gave. Small blocks here put many block boundaries in a corpus trace."""

from __future__ import annotations

import numpy as np
import pytest

from kinetoscope.analysis import dispatch, intervals, window
from kinetoscope.analysis.steps import device_anchor
from kinetoscope.trace import load

from ..conftest import corpus


@pytest.fixture(scope="module")
def trace():
    return load(corpus("gpu/resnet_train_ns.pt.trace.json.gz"))


def _walk(trace, event: int, targets: np.ndarray) -> int:
    """The nearest ancestor-or-self in `targets`, one parent at a time."""
    while event >= 0:
        if targets[event]:
            return event
        event = int(trace.parent[event])
    return -1


@pytest.mark.parametrize("block", [7, 1 << 18])
def test_nearest_ancestor_in_blocks_is_the_walk(trace, block, monkeypatch):
    monkeypatch.setattr(dispatch, "EVENT_BLOCK", block)
    rng = np.random.default_rng(block)
    events = rng.integers(-1, len(trace), 3000)
    targets = rng.random(len(trace)) < 0.05
    found = dispatch.nearest_ancestor(trace, events, targets)
    assert found.tolist() == [_walk(trace, int(e), targets) for e in events]
    assert (found >= 0).sum() > 100  # real walks were exercised


@pytest.mark.parametrize("seed", range(20))
def test_merge_indexed_is_the_merge_of_the_gathered(seed, monkeypatch):
    monkeypatch.setattr(intervals, "EVENT_BLOCK", 5)
    rng = np.random.default_rng(seed)
    n = 300
    starts = rng.integers(0, 400, n).astype(float) + rng.random(n) * (seed % 2)
    ends = starts + rng.integers(0, 30, n)
    index = rng.permutation(n)[: rng.integers(100, n)]
    if seed % 3 == 0:  # in start order, as the timeline's host events are
        index = index[np.argsort(starts[index], kind="stable")]
    got = intervals.merge_indexed(starts, ends, index)
    want = intervals.merge(starts[index], ends[index])
    assert all(np.array_equal(a, b) for a, b in zip(got, want, strict=True))
    assert len(want[0]) < len(index)  # overlapping intervals were joined


def test_in_window_of_an_index_is_in_window_of_the_gathered(trace, monkeypatch):
    monkeypatch.setattr(window, "EVENT_BLOCK", 11)
    host = np.flatnonzero(trace.lane_kind == 1)
    device = np.flatnonzero(trace.device_work)
    for column, index in ((trace.ts, host), (device_anchor(trace), device)):
        got = window.in_window(trace, column, index)
        assert np.array_equal(got, window.in_window(trace, column[index]))
    inside = window.in_window(trace, trace.ts, host)
    assert 0 < inside.sum() < len(host)  # host events on both sides of the window
