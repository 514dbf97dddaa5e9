"""Timestamp resolution: the smallest time step a trace can show.

Kineto writes microseconds. Current versions keep nanoseconds as three
decimals (`"dur": 22.545`); older ones and some exporters write whole
microseconds. In a whole-microsecond trace every start and end is truncated
to the microsecond, so a duration or gap carries up to one microsecond of
error either way: a 2 us dead window may have been 1.1 or 2.9 us, and a
"5x longer" comparison between two 1 us gaps means nothing. Rules that
measure tiny durations ask `resolvable` before reporting one.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..trace import Trace

#: Grids tried, coarsest first: whole us, then 100 ns, 10 ns, 1 ns.
_CANDIDATES_US = (1.0, 0.1, 0.01, 0.001)
#: Share of sampled values that must lie on a grid for the trace to be on it
#: (a few synthetic events, e.g. metadata written with another clock, may not).
_ON_GRID = 0.99
_SAMPLE = 20000
#: Fewer values than this could sit on a coarse grid by chance (a 1-in-10 chance
#: each for a 10 ns grid): too little evidence to claim a coarse resolution.
_MIN_VALUES = 5
#: A measured duration is trusted only from this many resolution steps up: with
#: both ends truncated, its error is up to one step, i.e. at most 25% from here.
MIN_STEPS = 4


@dataclass(frozen=True)
class Resolution:
    """Timestamp resolution (us) of host and device events, None where there are none."""

    host_us: float | None
    device_us: float | None

    @property
    def coarsest_us(self) -> float:
        """The resolution a host-to-device comparison (launch -> kernel) can rely on."""
        values = [v for v in (self.host_us, self.device_us) if v is not None]
        return max(values) if values else _CANDIDATES_US[-1]

    @property
    def whole_us(self) -> bool:
        return self.coarsest_us >= 1.0


def _sample(values: np.ndarray) -> np.ndarray:
    return values[:: max(len(values) // _SAMPLE, 1)]


def _on_grid(values: np.ndarray, grid: float, tolerance: float) -> bool:
    q = values / grid
    return bool(np.mean(np.abs(q - np.round(q)) <= tolerance) >= _ON_GRID)


def _grid(ts: np.ndarray, dur: np.ndarray, sel: np.ndarray) -> float | None:
    """The coarsest candidate grid that holds the start times and durations of the
    events in `sel`.

    Durations are small numbers, exact to far below a nanosecond. Start times
    are absolute (~1e15 us), where float64 itself rounds to a fraction of a
    nanosecond: a grid finer than a few of those steps cannot be judged from
    them, so only the durations decide there. Only the samples are gathered (the
    selected starts and durations of a large trace, copied whole, were a peak of
    `explain`'s memory); the extremes are masked reductions."""
    if not sel.any():
        return None
    lo = float(ts.min(where=sel, initial=np.inf))
    ulp = float(np.spacing(max(float(np.maximum(ts.max(where=sel, initial=-np.inf), -lo)), 1.0)))
    rel = _sample_of(ts, sel) - lo
    durs = _sample_of(dur, sel & (dur > 0))
    if len(rel) + len(durs) < _MIN_VALUES:
        return _CANDIDATES_US[-1]
    for grid in _CANDIDATES_US:
        if len(durs) and not _on_grid(durs, grid, 0.01):
            continue
        if 4 * ulp < grid and not _on_grid(rel, grid, 0.01 + ulp / grid):
            continue
        return grid
    return _CANDIDATES_US[-1]


def _sample_of(values: np.ndarray, sel: np.ndarray) -> np.ndarray:
    """`_sample(values[sel])`, gathering only the sampled values."""
    return values[_sample(np.flatnonzero(sel))]


def _lane_resolution(trace: Trace, kind: int) -> float | None:
    return _grid(trace.ts, trace.dur, (trace.lane_kind == kind) & ~trace.is_instant)


def timestamp_resolution(trace: Trace) -> Resolution:
    return trace.memo(_timestamp_resolution)


def _timestamp_resolution(trace: Trace) -> Resolution:
    return Resolution(host_us=_lane_resolution(trace, 1), device_us=_lane_resolution(trace, 2))


def resolvable(value_us: float, resolution_us: float) -> bool:
    """Whether a duration measured at `resolution_us` is precise enough to report."""
    return value_us >= MIN_STEPS * resolution_us
