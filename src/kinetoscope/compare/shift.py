"""Whether two sets of steps differ: a bootstrap interval of the median difference.

A diff holds a few steps of each run, and the figure it reports is the change
of the median step. Whether that change is real is a question about the two
sets of steps, not about the medians alone: six steps of B at 82-166 ms against
six of A at 75-81 ms are all slower, although the medians' difference is
smaller than B's own spread (a spread-against-difference rule calls it noise).

The interval asks how far the median difference moves when each run's steps
are drawn again: both sets are resampled with replacement, independently,
`RESAMPLES` times, and the difference of medians recomputed; its 2.5th and
97.5th percentiles bound a 95% interval. The change is real when the interval
excludes zero. Two properties follow from the construction, not from a tuned
threshold: where the sets do not overlap, every resampled median of one run
lies beyond every resampled median of the other, so the interval cannot hold
zero ("noise" is said only where the sets overlap); and a run's rare slow step
(a cold first step, a page fault) moves few resampled medians, so it does not
hide a shift of the rest. With fewer than `MIN_STEPS` steps in a run the
resampled medians are a handful of the values themselves, not an interval
(with 2 steps every "interval" is just the two steps), so no judgement is made.

The seed is fixed, so a diff of the same two traces always says the same thing.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

#: bootstrap resamples; the interval's ends move by well under 1% of the spread between
#: seeds at this count
RESAMPLES = 4000
#: two-sided confidence level of the interval
LEVEL = 0.95
#: fewer steps than this in either run and no interval is computed
MIN_STEPS = 3
#: the fixed seed: the same two traces always give the same interval
SEED = 0


@dataclass(frozen=True)
class Shift:
    """The difference of medians (B - A) with its bootstrap interval."""

    delta: float
    #: the interval's ends (None with fewer than MIN_STEPS steps in a run)
    low: float | None
    high: float | None
    #: False when every value of one run lies below every value of the other
    overlap: bool

    @property
    def real(self) -> bool:
        """The interval excludes zero."""
        return self.low is not None and (self.low > 0 or self.high < 0)


def median_shift(a: list[float], b: list[float]) -> Shift | None:
    """B's median minus A's, with its 95% bootstrap interval; None when a run has no steps."""
    xa, xb = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    if len(xa) == 0 or len(xb) == 0:
        return None
    delta = float(np.median(xb) - np.median(xa))
    overlap = not (xa.max() < xb.min() or xb.max() < xa.min())
    if min(len(xa), len(xb)) < MIN_STEPS:
        return Shift(delta, None, None, overlap)
    rng = np.random.default_rng(SEED)
    med_a = np.median(rng.choice(xa, (RESAMPLES, len(xa))), axis=1)
    med_b = np.median(rng.choice(xb, (RESAMPLES, len(xb))), axis=1)
    tail = (1 - LEVEL) / 2 * 100
    low, high = np.percentile(med_b - med_a, [tail, 100 - tail])
    return Shift(delta, float(low), float(high), overlap)
