"""The per-step change split into its parts, each held against step-to-step noise.

A step is wall-clock time on the host; `analysis.hosttime` gives every instant
of it to data wait, sync wait, dispatch + launch or Python/other (the four add
up to the step), and `analysis.steps` measures the device busy time the step
launched (which runs under those host parts, not beside them). Comparing the
medians of each part between two runs says where a change comes from.

A difference is only a change when it is larger than the step-to-step spread
of that part: the same program varies from step to step (data loading,
allocator, clocks), so a 2 ms gain where steps already vary by 5 ms is noise.
The noise figure of a part is the larger of the two runs' spreads, a run's
spread being the larger of its interquartile range and its p90 - median (the
second catches the rare slow step the IQR of a few steps ignores). With one
step per run there is no spread to measure, and the diff says so instead of
calling any difference real.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..analysis.stats import TraceStats

#: The parts compared, as (key, StepFigures attribute, words). The step itself first.
PARTS = (
    ("step_time_us", "dur", "step time"),
    ("device_busy_per_step_us", "device_busy_us", "device busy"),
    # a CPU run's math-op self time (analysis.cpu_compute), shown only where either run has it
    ("compute_us", "compute_us", "compute"),
    ("dispatch_us", "dispatch_us", "dispatch + launch"),
    ("data_wait_us", "data_wait_us", "data wait"),
    ("sync_wait_us", "sync_wait_us", "sync wait"),
    ("other_us", "other_us", "Python/other"),
)
#: Differences below this many microseconds are no change at all (timer resolution).
RESOLUTION_US = 1.0
#: Beyond the noise but under this share of A's median step: real, and too small to matter.
NEGLIGIBLE_SHARE = 0.01


@dataclass(frozen=True)
class Component:
    """One part of the step: medians per step in each run, the change, and its noise."""

    key: str
    words: str
    a_us: float
    b_us: float
    delta_us: float
    #: the step-to-step spread this change is held against (None: fewer than 2 steps each)
    noise_us: float | None
    #: "none" (equal within timer resolution), "noise", "negligible" (beyond the noise but
    #: under 1% of the step), "gain" (less time in B), "loss" (more time in B), or
    #: "unmeasured" (a difference, but no spread to judge it by)
    status: str


def spread(values: list[float]) -> float | None:
    """max(IQR, p90 - median) of one run's per-step values; None with fewer than 2 steps."""
    if len(values) < 2:
        return None
    p25, p50, p75, p90 = np.percentile(np.asarray(values, dtype=np.float64), [25, 50, 75, 90])
    return float(max(p75 - p25, p90 - p50))


def _status(delta: float, noise: float | None, step_us: float) -> str:
    if abs(delta) < RESOLUTION_US:
        return "none"
    if noise is None:
        return "unmeasured"
    if abs(delta) <= noise:
        return "noise"
    if abs(delta) < NEGLIGIBLE_SHARE * step_us:
        return "negligible"
    return "gain" if delta < 0 else "loss"


def decompose(a: TraceStats, b: TraceStats) -> list[Component]:
    """Each part's median in A and B, the change, the noise, and what the change is."""
    out = []
    step_us = a.spreads["step_time_us"].median
    cpu = any(s.compute_us > 0 for run in (a, b) for s in run.steps)
    for key, attr, words in PARTS:
        if key == "compute_us" and not cpu:
            continue
        med_a, med_b = a.spreads[key].median, b.spreads[key].median
        spreads = [spread([getattr(s, attr) for s in run.steps]) for run in (a, b)]
        known = [s for s in spreads if s is not None]
        noise = max(known) if known else None
        delta = med_b - med_a
        status = _status(delta, noise, step_us)
        out.append(Component(key, words, med_a, med_b, delta, noise, status))
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
