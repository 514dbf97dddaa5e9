"""When a trial beats the noise: the statistics of `kinetoscope tune`.

Each trial gives a handful of samples, one per timed block of steps: the
block's throughput (samples per second = samples per step / mean step time of
the block). The speed-up of a trial over its reference (the baseline, or the
combination of winners for settings tried on top of it) is the ratio of the
median throughputs. Its uncertainty is a percentile bootstrap: both sample sets
are resampled with replacement, independently, `RESAMPLES` times, and the ratio
of medians recomputed; the 2.5th and 97.5th percentiles bound a 95% interval.

A change is accepted only when that interval lies wholly above 1.0: a
speed-up whose interval reaches 1.0 is what two runs of one configuration
could show by chance, given the block-to-block spread measured in the same
runs. The rule has no tuned threshold; what it assumes is that blocks are
exchangeable within a trial, which is why the first steps (warm-up) are never
timed. Slow drift of the machine between trials is not covered by the
interval; the tuner re-measures the baseline at the end to show its size.
Medians rather than means: one block hit by a page fault or a neighbour's job
moves a mean, not a median.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

#: bootstrap resamples; the interval's ends move by well under 1% between seeds at this count
RESAMPLES = 4000
#: two-sided confidence level of the speed-up interval
LEVEL = 0.95
#: fewer timed blocks than this and no interval is computed (nothing to resample)
MIN_BLOCKS = 3


@dataclass(frozen=True)
class Spread:
    """Median and quartiles of one trial's samples."""

    median: float
    q1: float
    q3: float
    n: int

    @property
    def iqr(self) -> float:
        return self.q3 - self.q1


@dataclass(frozen=True)
class SpeedUp:
    """Ratio of median throughputs (trial / reference) with its bootstrap interval."""

    ratio: float
    low: float | None
    high: float | None

    @property
    def beats_noise(self) -> bool:
        """The interval excludes 1.0 from above: a real gain, not chance."""
        return self.low is not None and self.low > 1.0

    @property
    def worse(self) -> bool:
        """The interval excludes 1.0 from below: a real loss."""
        return self.high is not None and self.high < 1.0


def spread(samples: list[float]) -> Spread:
    values = np.asarray(samples, dtype=float)
    q1, med, q3 = np.percentile(values, [25, 50, 75])
    return Spread(float(med), float(q1), float(q3), len(values))


def speed_up(reference: list[float], trial: list[float], seed: int = 0) -> SpeedUp:
    """Speed-up of `trial` over `reference` (throughput samples, higher is better)."""
    ref = np.asarray(reference, dtype=float)
    new = np.asarray(trial, dtype=float)
    ratio = float(np.median(new) / np.median(ref))
    if min(len(ref), len(new)) < MIN_BLOCKS:
        return SpeedUp(ratio, None, None)
    rng = np.random.default_rng(seed)
    ref_medians = np.median(rng.choice(ref, (RESAMPLES, len(ref))), axis=1)
    new_medians = np.median(rng.choice(new, (RESAMPLES, len(new))), axis=1)
    tail = (1 - LEVEL) / 2 * 100
    low, high = np.percentile(new_medians / ref_medians, [tail, 100 - tail])
    return SpeedUp(ratio, float(low), float(high))


RULE = (
    "accepted when the 95% bootstrap interval of the speed-up (ratio of median "
    "throughputs over timed blocks) lies above 1.0"
)
