"""Per-step analyses in one pass over the events, not one pass per step.

A trace with hundreds of steps made `explain` quadratic (kernel types per step,
the step-window test, ranges per optimizer step: 128 s on a 415-step 1 GB
trace). Each whole-array version is checked here against the plain definition
it replaced, on random inputs with overlaps, ties, empty and NaN windows.
"""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest

from kinetoscope.analysis import window
from kinetoscope.analysis.kernel_types import KERNEL_TYPES, _by_step
from kinetoscope.trace.model import Trace


def _windows(rng: np.random.Generator, count: int) -> list[tuple[int, int, float, float]]:
    starts = rng.integers(0, 1000, count).astype(float)
    lengths = rng.choice([0.0, 1.0, 5.0, 40.0, -3.0], count)  # empty and reversed too
    ends = starts + lengths
    ends[rng.random(count) < 0.05] = np.nan
    return [(k, k, float(s), float(e)) for k, (s, e) in enumerate(zip(starts, ends, strict=True))]


@pytest.mark.parametrize("seed", range(25))
def test_in_window_is_the_union_of_the_step_windows(seed, monkeypatch):
    rng = np.random.default_rng(seed)
    spans = _windows(rng, int(rng.integers(1, 60)))
    monkeypatch.setattr(window, "windows", lambda trace: spans)
    times = np.concatenate((rng.integers(-10, 1100, 500).astype(float), [np.nan, np.inf]))
    times[:50] = [s for _, _, s, _ in spans[:50]] + [0.0] * (50 - len(spans[:50]))  # on edges
    expected = np.zeros(len(times), dtype=bool)
    for _, _, start, end in spans:
        expected |= (times >= start) & (times < end)
    got = window.in_window(SimpleNamespace(steps=[1]), times)
    assert np.array_equal(got, expected)
    assert expected.any() and not expected.all()


@pytest.mark.parametrize("seed", range(25))
def test_events_in_matches_a_scan(seed):
    rng = np.random.default_rng(seed)
    ts = rng.integers(0, 200, 300).astype(float)  # many equal starts
    ts[rng.integers(0, 300, 10)] = np.nan
    trace = Trace.__new__(Trace)
    trace.ts = ts
    mask = rng.random(300) < 0.5
    for start, end in [(10.0, 90.0), (50.0, 50.0), (90.0, 10.0), (-np.inf, np.inf), (0, np.nan)]:
        for m in (None, mask):
            sel = (ts >= start) & (ts < end)
            expected = np.flatnonzero(sel if m is None else sel & m)
            assert np.array_equal(trace.events_in(start, end, m), expected)


@pytest.mark.parametrize("seed", range(10))
def test_kernel_types_by_step_matches_masking(seed):
    rng = np.random.default_rng(seed)
    n = 2000
    numbers = rng.integers(-1, 40, n)
    labels = np.array(rng.choice(KERNEL_TYPES, n), dtype=object)
    durs = rng.random(n) * 100
    expected = {}
    for number in np.unique(numbers).tolist():
        if number < 0:
            continue
        here = numbers == number
        expected[number] = {
            t: float(durs[here & (labels == t)].sum())
            for t in KERNEL_TYPES
            if (here & (labels == t)).any()
        }
    got = _by_step(numbers, np.array([KERNEL_TYPES.index(t) for t in labels]), durs)
    assert got == expected  # bitwise: the same elements in the same order are summed
    assert [list(v) for v in got.values()] == [list(v) for v in expected.values()]
    assert list(got) == list(expected)
