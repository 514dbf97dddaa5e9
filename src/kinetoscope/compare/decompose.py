"""The per-step change split into its parts, each held against step-to-step noise.

A step is wall-clock time on the host; `analysis.hosttime` gives every instant
of it to data wait, sync wait, dispatch + launch or Python/other (the four add
up to the step), and `analysis.steps` measures the device busy time the step
launched (which runs under those host parts, not beside them). Comparing the
medians of each part between two runs says where a change comes from.

The parts are those of each run's median step (with an even count, the mean of
the two middle steps), so they add up to the step time shown: medians taken
part by part come from different steps, do not add up, and can show a part
moving by more than a whole step. Device busy (not a part: it runs under
them) is the median over steps, as every command shows it.

A difference is only a change when the two sets of steps differ: the same
program varies from step to step (data loading, allocator, clocks), so each
part is judged by a bootstrap interval of the difference of its medians over
the per-step values of both runs (`shift`): a change where the interval
excludes zero, "noise" where it holds zero (which can only happen where the
two sets overlap), "unmeasured" with fewer than 3 steps in a run. The spread
(the larger of the two runs' max(IQR, p90 - median)) is shown as the size of
the step-to-step variation.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..analysis.stats import TraceStats
from .shift import Shift, median_shift

#: The parts compared, as (key, StepFigures attribute, words). The step itself first.
PARTS = (
    # a step's time: its host window, or its device busy time where longer (StepStats)
    ("step_time_us", "time_us", "step time"),
    ("device_busy_per_step_us", "device_busy_us", "device busy"),
    # a CPU run's math-op self time (analysis.cpu_compute), shown only where either run has it
    ("compute_us", "compute_us", "compute"),
    ("dispatch_us", "dispatch_us", "dispatch + launch"),
    ("data_wait_us", "data_wait_us", "data wait"),
    ("sync_wait_us", "sync_wait_us", "sync wait"),
    ("other_us", "other_us", "Python/other"),
)
#: The host parts, which add up to the step: read from the median step.
HOST_PARTS = frozenset({"dispatch_us", "data_wait_us", "sync_wait_us", "compute_us", "other_us"})
#: Differences below this many microseconds are no change at all (timer resolution).
RESOLUTION_US = 1.0
#: A real change under this share of A's median step: real, and too small to matter.
NEGLIGIBLE_SHARE = 0.01


@dataclass(frozen=True)
class Component:
    """One part of the step: its figure per step in each run, the change, and its judgement."""

    key: str
    words: str
    a_us: float
    b_us: float
    delta_us: float
    #: the step-to-step spread, the larger of the two runs' (None: fewer than 2 steps each)
    noise_us: float | None
    #: "none" (equal within timer resolution), "noise" (the interval of the median
    #: difference holds zero), "negligible" (a real difference under 1% of the step),
    #: "gain" (less time in B), "loss" (more time in B), or "unmeasured" (fewer than 3
    #: steps in a run: no interval)
    status: str
    #: 95% bootstrap interval of the per-step medians' difference B - A (None: too few steps)
    low_us: float | None = None
    high_us: float | None = None


def spread(values: list[float]) -> float | None:
    """max(IQR, p90 - median) of one run's per-step values; None with fewer than 2 steps."""
    if len(values) < 2:
        return None
    p25, p50, p75, p90 = np.percentile(np.asarray(values, dtype=np.float64), [25, 50, 75, 90])
    return float(max(p75 - p25, p90 - p50))


def _status(delta: float, shift: Shift | None, step_us: float) -> str:
    if abs(delta) < RESOLUTION_US:
        return "none"
    if shift is None or shift.low is None:
        return "unmeasured"
    if not shift.real:
        return "noise"
    if abs(delta) < NEGLIGIBLE_SHARE * step_us:
        return "negligible"
    return "gain" if shift.high < 0 else "loss"  # the interval's side, not the point's


def median_step_parts(run: TraceStats) -> dict[str, float]:
    """The host parts of the median step: the mean of the middle one or two steps by
    duration, so they add up to the median step time exactly."""
    if not run.steps:
        return {key: 0.0 for key in HOST_PARTS}
    ordered = sorted(run.steps, key=lambda s: s.dur)
    n = len(ordered)
    middle = ordered[(n - 1) // 2 : n // 2 + 1]
    return {
        key: float(np.mean([getattr(s, attr) for s in middle]))
        for key, attr, _ in PARTS
        if key in HOST_PARTS
    }


def decompose(a: TraceStats, b: TraceStats) -> list[Component]:
    """Each part's figure in A and B, the change, its spread, and what the change is."""
    out = []
    step_us = a.spreads["step_time_us"].median
    cpu = any(s.compute_us > 0 for run in (a, b) for s in run.steps)
    parts = median_step_parts(a), median_step_parts(b)
    for key, attr, words in PARTS:
        if key == "compute_us" and not cpu:
            continue
        if key in HOST_PARTS:
            fig_a, fig_b = parts[0][key], parts[1][key]
        else:
            fig_a, fig_b = a.spreads[key].median, b.spreads[key].median
        values = [[getattr(s, attr) for s in run.steps] for run in (a, b)]
        known = [x for x in (spread(v) for v in values) if x is not None]
        shift = median_shift(*values)
        delta = fig_b - fig_a
        status = _status(delta, shift, step_us)
        out.append(
            Component(
                key,
                words,
                fig_a,
                fig_b,
                delta,
                max(known) if known else None,
                status,
                None if shift is None else shift.low,
                None if shift is None else shift.high,
            )
        )
    return out


def cause(components: list[Component]) -> Component | None:
    """The part that explains the step's change: the largest change beyond noise in the
    step's direction (None when the step did not change beyond its noise)."""
    step, parts = components[0], components[1:]
    if step.status not in ("gain", "loss", "unmeasured"):
        return None
    same_way = [
        c
        for c in parts
        if c.delta_us * step.delta_us > 0 and c.status in ("gain", "loss", "unmeasured")
    ]
    return max(same_way, key=lambda c: abs(c.delta_us), default=None)
