"""The one set of numbers: every per-step and window figure a user can compare.

`summary`, `explain` (text, JSON, HTML), `diff`, `check`, `sweep` and the
multi-rank view all read these figures instead of recomputing their own, so a
trace gives the same step time, busy ratio, shares and outlier count in every
command. Each figure says which statistic it is (`STATISTIC`): per-step figures
are the median over the profiled steps (JSON also carries the mean and p90),
window figures are totals or ratios of totals over the window (the steps
summed; the whole trace when it has no `ProfilerStep#N`).

Ratios are defined once: `device_busy_ratio` = device busy / window time (the
window account's device class: the time a stream ran inside the window; the
per-step figures count the work each step launched, `analysis.steps`),
`host_busy_ratio` = host busy / window time, `device_to_host_ratio` = device busy
/ host busy time (over the window time when no host time was recorded); the
verdict reads the account's own shares. On a trace without
device work the regime's number is `compute_share` instead: the share of the
window spent inside the math ops' self time (`analysis.cpu_compute`), the CPU
run's analog of a busy device.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..trace import Trace
from .account.account import window_account
from .hosttime import StepHostTime, host_time
from .steps import StepStats, step_stats
from .syncs import sync_sites

#: A step lasting longer than this multiple of the median step is an outlier
#: (the `step-outlier` rule's default `ratio`; the rule and the step table share it).
OUTLIER_FACTOR = 1.3
#: Fewer steps than this and no step is called an outlier (nothing to compare with).
OUTLIER_MIN_STEPS = 3

#: Per-step figures: (key in `metrics`, StepFigures attribute).
PER_STEP = (
    ("step_time_us", "time_us"),
    ("host_time_per_step_us", "host_busy_us"),
    ("device_busy_per_step_us", "device_busy_us"),
    ("device_ratio_per_step", "device_ratio"),
    ("kernels_per_step", "kernels"),
    ("launches_per_step", "launches"),
    ("syncs_per_step", "syncs"),
    ("data_wait_us", "data_wait_us"),
    ("sync_wait_us", "sync_wait_us"),
    ("compute_us", "compute_us"),
    ("dispatch_us", "dispatch_us"),
    ("other_us", "other_us"),
)
#: The window account's classes as shares of the window (`analysis.account`: they add up
#: to 1): (metric key, account class). The device's share is `device_busy_ratio` (0 on a
#: trace without device work, where the CPU's math is `compute_share`).
SHARES = (
    ("data_share", "data"),
    ("sync_share", "sync_stall"),
    ("external_share", "external"),
    ("compute_share", "device"),
    ("dispatch_share", "dispatch"),
    ("other_share", "python"),
    ("one_time_share", "one_time"),
    ("untraced_share", "untraced"),
    ("profiler_share", "profiler"),
)
#: What each figure of `metrics` is, for labels in every renderer and the JSON.
STATISTIC = {
    **{key: "median of steps" for key, _ in PER_STEP},
    "steps": "count",
    "window_us": "total over the window",
    "host_time_us": "total over the window",
    "device_busy_us": "total over the window",
    "compile_us": "total over the window",
    "host_busy_ratio": "window total ratio",
    "device_busy_ratio": "window total ratio",
    "device_to_host_ratio": "window total ratio",
    "outlier_steps": "count",
    **{key: "window total ratio" for key, _ in SHARES},
    "compile_share": "window total ratio",
}


@dataclass(frozen=True)
class StepFigures:
    """One step's figures: activity (`analysis.steps`) and host-time decomposition."""

    activity: StepStats
    host: StepHostTime
    syncs: int

    def __getattr__(self, name: str):
        # the step's fields read through: figures.dur, figures.kernels, figures.data_wait_us
        for part in ("activity", "host"):
            obj = object.__getattribute__(self, part)
            if hasattr(obj, name):
                return getattr(obj, name)
        raise AttributeError(name)


@dataclass(frozen=True)
class Spread:
    """A per-step figure over the steps."""

    median: float
    mean: float
    p90: float

    @classmethod
    def of(cls, values: list[float]) -> Spread:
        arr = np.asarray(values, dtype=np.float64)
        if not len(arr):
            return cls(0.0, 0.0, 0.0)
        return cls(float(np.median(arr)), float(arr.mean()), float(np.percentile(arr, 90)))


@dataclass(frozen=True)
class TraceStats:
    origin_us: float  # absolute timestamp of the trace start: every relative time's zero
    steps: list[StepFigures]
    spreads: dict[str, Spread]  # per-step figures (PER_STEP keys)
    window_us: float
    host_time_us: float
    device_busy_us: float
    compile_us: float
    outliers: list[tuple[int | None, float]]  # (step number, x median) of the outlier steps
    has_steps: bool
    #: `SHARES` keys (and compile_share) -> share of the window, from the window account
    account_shares: dict[str, float]

    def outlier_factor(self, number: int | None) -> float | None:
        return dict(self.outliers).get(number)

    def metrics(self) -> dict[str, float]:
        """The flat figures of `Report.metrics` (and what `check` can name)."""
        window = self.window_us
        return {
            "steps": len(self.steps) if self.has_steps else 0,
            "window_us": window,
            "host_time_us": self.host_time_us,
            "device_busy_us": self.device_busy_us,
            "compile_us": self.compile_us,
            "host_busy_ratio": self.host_time_us / window if window > 0 else 0.0,
            # the account's device share: of its window (the steps until the work they
            # launched ends), the base every other share has
            "device_busy_ratio": self.account_shares["device_busy_ratio"],
            "device_to_host_ratio": _ratio(self.device_busy_us, self.host_time_us or window),
            "outlier_steps": len(self.outliers),
            **self.shares(),
            **{key: spread.median for key, spread in self.spreads.items()},
        }

    def shares(self) -> dict[str, float]:
        """The window account's classes (and compilation) as shares of the window."""
        return {k: v for k, v in self.account_shares.items() if k != "device_busy_ratio"}

    def spread_dict(self) -> dict[str, dict[str, float]]:
        """`{figure: {median, mean, p90}}` for the JSON outputs."""
        return {
            k: {"median": s.median, "mean": s.mean, "p90": s.p90} for k, s in self.spreads.items()
        }


def trace_stats(trace: Trace, outlier_factor: float = OUTLIER_FACTOR) -> TraceStats:
    return trace.memo(_stats, outlier_factor)


def _stats(trace: Trace, outlier_factor: float) -> TraceStats:
    activity = step_stats(trace)
    hosts = host_time(trace)
    syncs: dict[int | None, int] = {}
    for site in sync_sites(trace):
        syncs[site.step] = syncs.get(site.step, 0) + 1
    steps = [
        StepFigures(a, h, syncs.get(a.number, 0)) for a, h in zip(activity, hosts, strict=True)
    ]
    spreads = {key: Spread.of([getattr(s, attr) for s in steps]) for key, attr in PER_STEP}
    return TraceStats(
        origin_us=trace.start_time,
        steps=steps,
        spreads=spreads,
        window_us=sum(s.dur for s in steps),
        host_time_us=sum(s.host_busy_us for s in steps),
        device_busy_us=_device_busy(trace),
        compile_us=sum(s.compile_us for s in steps),
        outliers=step_outliers(activity, outlier_factor),
        has_steps=bool(trace.steps),
        account_shares=_account_shares(trace),
    )


def _account_shares(trace: Trace) -> dict[str, float]:
    """The `SHARES` of the window account, and compilation's share of the window."""
    account = window_account(trace)
    shares = account.shares()
    out = {key: shares[cls] for key, cls in SHARES}
    out["device_busy_ratio"] = 0.0 if account.on_cpu else shares["device"]
    if not account.on_cpu:
        out["compute_share"] = 0.0  # the device's share is device_busy_ratio
    window = account.window_us
    compiling = account.causes.get("one_time", {}).get("compilation", 0.0)
    out["compile_share"] = compiling / window if window > 0 else 0.0
    return out


def _device_busy(trace: Trace) -> float:
    """Device busy time in the window: the window account's device class (real time a
    stream ran inside the window, whoever launched it), 0 on a trace without device
    work (there the account's device is the CPU's math)."""
    account = window_account(trace)
    return 0.0 if account.on_cpu else account.us("device")


def step_outliers(steps: list[StepStats], factor: float = OUTLIER_FACTOR):
    """(step number, x median) of the steps lasting over `factor` x the median step, both
    as step times (`StepStats.time_us`: the device's where it outlasts the host's window)
    (all steps, the first included: it is slow when cold, and cold-start says why)."""
    if len(steps) < OUTLIER_MIN_STEPS:
        return []
    med = float(np.median([s.time_us for s in steps]))
    if med <= 0:
        return []
    return [(s.number, s.time_us / med) for s in steps if s.time_us > factor * med]


def trace_metrics(trace: Trace) -> dict[str, float]:
    """`trace_stats(trace).metrics()`: the flat figures, for rules that need one or two."""
    return trace_stats(trace).metrics()


def _ratio(part: float, whole: float) -> float:
    return part / whole if whole > 0 else 0.0


#: The words of each share key, as the verdict line and the window account word them.
SHARE_WORDS = {
    "device_busy_ratio": "device busy",
    "compute_share": "CPU compute",
    "data_share": "data wait",
    "sync_share": "sync stall",
    "external_share": "waiting outside the trace",
    "dispatch_share": "dispatch + launch",
    "other_share": "Python",
    "one_time_share": "one-time work",
    "untraced_share": "untraced",
    "profiler_share": "profiler",
}


def decomposition_parts(metrics: dict[str, float]) -> list[tuple[str, str]]:
    """(share key, words) of the window account's classes a report shows: those holding
    time, the device's busy share first (CPU compute on a run without device work)."""
    cpu = metrics.get("compute_share", 0.0) > 0
    out = []
    for key, words in SHARE_WORDS.items():
        if key == "device_busy_ratio" and cpu:
            continue
        if metrics.get(key, 0.0) > 0:
            out.append((key, "dispatch" if cpu and key == "dispatch_share" else words))
    return out


def decomposition_text(metrics: dict[str, float]) -> str:
    """`device busy 56.0%, data wait 33.9%, dispatch + launch 9.4%, Python 0.7%`: the
    window account as shares of the window, as every renderer words them."""
    return ", ".join(
        f"{words} {100 * metrics.get(key, 0.0):.1f}%" for key, words in decomposition_parts(metrics)
    )
