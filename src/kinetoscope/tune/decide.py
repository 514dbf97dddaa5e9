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
exchangeable within a trial, which is why the first steps (warm-up, where
torch.compile compiles) are never timed. Medians rather than means: one block
hit by a page fault or a neighbour's job moves a mean, not a median.

The interval cannot see the machine change between runs (another job starts,
clocks throttle): a baseline measured while the machine was busy makes any
candidate measured after it look faster, by any factor. So every trial is
measured between two runs of its reference (A B A B A ..., `judge`): it is
accepted only when it beats the noise against the run before it and against
the run after it. Where the two reference runs differ beyond their noise and
the two comparisons disagree, the result is a measurement fault, said and not
accepted: a "150x" that holds against one reference run and not the other is
the machine, not the change. So is a gain the machine's load alone could
make (`load_fault`): the clock reads how long each run's threads were ready
but waiting for a CPU (Linux schedstat); when a reference run waited longer
per step than the trial by at least what the trial saves per step, the
"gain" may be only that the reference shared the cores more (on a two-core
machine under a load of 9 a 64x64 matmul's blocks read anywhere from 0.8 to
60 ms per step). A trial that waited more than its references and was still
faster is not suspect: the load can only have hidden part of its gain.
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


@dataclass(frozen=True)
class Judgement:
    """A trial against the runs of its reference before and after it."""

    #: over the reference runs before and after, pooled (what the table shows)
    speed: SpeedUp
    before: SpeedUp
    after: SpeedUp | None
    #: the reference's run after over its run before (None without a run after)
    drift: SpeedUp | None
    accepted: bool | None  # None: not judged (no run after)
    fault: str | None = None

    @property
    def drifted(self) -> bool:
        return self.drift is not None and (self.drift.beats_noise or self.drift.worse)


@dataclass(frozen=True)
class Waited:
    """One run's median seconds per step and its threads' run-queue wait per timed second
    (Linux schedstat, summed over threads; None where unknown)."""

    label: str
    step_s: float
    share: float | None

    @property
    def waited_s(self) -> float | None:
        """Seconds per step the run's threads were ready but not running."""
        return None if self.share is None else self.share * self.step_s


def load_fault(reference: list[Waited], trial: Waited) -> str | None:
    """A measurement fault when waiting for a CPU could make the whole gain: a reference
    run whose threads waited longer per step than the trial's, by at least the time per
    step the trial saves, would have been as fast on a machine of its own. Thread waits
    are summed, which overstates a multi-threaded run's lost wall time: the check errs
    toward calling a gain a fault, never toward accepting one."""
    if trial.waited_s is None:
        return None
    for ref in reference:
        if ref.waited_s is None:
            continue
        saved = ref.step_s - trial.step_s
        extra = ref.waited_s - trial.waited_s
        if saved > 0 and extra >= saved:
            return (
                f"measurement fault: the machine was busy: {ref.label}'s threads waited for a "
                f"CPU {_ms(ref.waited_s)} per step ({ref.share:.0%} of its timed time, Linux "
                f"schedstat), the trial's {_ms(trial.waited_s)}: {_ms(extra)} more, as much as "
                f"the {_ms(saved)} per step the trial saves, so the load alone could make the "
                "gain: not accepted"
            )
    return None


def _ms(seconds: float) -> str:
    return f"{seconds * 1e3:.3g} ms"


def judge(before: list[float], trial: list[float], after: list[float] | None) -> Judgement:
    """Judge `trial` against its reference's runs right before and right after it (each a
    list of throughput samples, higher is better)."""
    speed = speed_up(before + list(after or []), trial)
    first = speed_up(before, trial)
    if not after:
        why = "no run of its reference after it (the session stopped): not judged"
        return Judgement(speed, first, None, None, None, why)
    second = speed_up(after, trial)
    drift = speed_up(before, after)
    accepted = first.beats_noise and second.beats_noise
    judged = Judgement(speed, first, second, drift, accepted)
    disagree = first.beats_noise != second.beats_noise or first.worse != second.worse
    if judged.drifted and disagree:
        fault = (
            f"measurement fault: the reference's run after this trial ran at "
            f"{drift.ratio:.2f}x the throughput of its run before (95% interval "
            f"{drift.low:.2f}-{drift.high:.2f}), and the trial is {first.ratio:.2f}x the run "
            f"before but {second.ratio:.2f}x the run after: the machine changed, not accepted"
        )
        return Judgement(speed, first, second, drift, False, fault)
    return judged


RULE = (
    "accepted when the 95% bootstrap interval of the speed-up (ratio of median "
    "throughputs over timed blocks) lies above 1.0 against the reference's runs both "
    "before and after the trial"
)
