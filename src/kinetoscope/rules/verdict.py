"""Regime: one verdict per trace, read from the window account.

All regime rules read the same `classify` call, and so does the report's verdict,
so exactly one of them fires and it always agrees with the verdict line. The call
reads the window account (`analysis.account`): every instant of the window given to
what held it. One-time, profiler and untraced time are set apart; the verdict judges
the steady part, the rest. The regimes are tried in this order:

1. `not-judged`: the capture cannot be judged (`analysis.account.capture`: device
   records lost, a window mostly empty or dead, too few events). Any other poor check of
   the trust grade (clock skew, lost events, a contended CPU, steps wrapping several
   iterations) qualifies whatever verdict is given, in its line.
2. `compile-window`: compilation holds at least `min_share` of the window.
3. `cold-window`: one-time work (compilation, context start-up, module loading,
   library set-up) holds at least `min_share` of the window, or nothing steady is
   left: the window is a first call; profile after warm-up.
4. `data-bound`, `sync-bound`, `external-wait`: a wait (the next batch, a device sync
   while the device idles, a wait on something outside the trace) holds at least
   `min_share` of the steady part and more than every other host-side class. None
   fires when the device is busy for at least `compute-bound.min_device_ratio` of
   the steady part: then the device is the bottleneck, and a host waiting on a busy
   device is the device's time in the account, not a wait.
5. `overhead-bound`, `compute-bound`, `mixed`, `host-only`: the device's share of the
   steady part (on a trace without device work, the math ops' arithmetic: the CPU's
   device) against the thresholds. `host-only` is left for a trace with neither.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ..analysis.account import sets
from ..analysis.account.account import STEADY, WindowAccount, window_account
from ..analysis.account.capture import WITHHOLD
from ..analysis.account.sources import ONE_TIME_CAUSES, one_time_events
from ..analysis.quality import trace_quality
from ..analysis.stepmap import step_count
from ..formatting.units import fmt_pct, fmt_us
from ..trace import Trace

REGIMES = (
    "not-judged",
    "compile-window",
    "cold-window",
    "data-bound",
    "sync-bound",
    "external-wait",
    "overhead-bound",
    "compute-bound",
    "mixed",
    "host-only",
)
#: The wait regimes and the account class each one reads.
WAITS = {"data-bound": "data", "sync-bound": "sync_stall", "external-wait": "external"}
#: Verdicts that say the window is one-time work, and the cause key their findings and
#: cold-start's share (`rules.merge` folds them into one finding).
ONE_TIME_VERDICTS = frozenset({"cold-window", "compile-window"})
ONE_TIME = "one-time"
#: Host-side classes of the steady part: a wait regime's class must beat every other.
HOST_SIDE = tuple(c for c in STEADY if c != "device")


@dataclass(frozen=True)
class RegimeCall:
    regime: str
    account: WindowAccount
    step_count: int
    overhead_max_ratio: float
    compute_min_ratio: float
    device: str | None
    #: the share of the window (compile-window, cold-window) or of the steady part (the
    #: waits) a regime needs
    min_shares: dict[str, float]
    #: why the verdict is withheld (not-judged) or qualified: the capture's poor checks
    reasons: list[str] = field(default_factory=list)
    #: the one-time call that held the window longest: (name, time it held, start relative
    #: to the trace start), None without one
    longest_once: tuple[str, float, float] | None = None

    @property
    def window_us(self) -> float:
        return self.account.window_us

    @property
    def steady_us(self) -> float:
        return self.account.steady_us

    @property
    def device_busy_us(self) -> float:
        return self.account.us("device")

    @property
    def host_time_us(self) -> float:
        """The steady time the host held the path (every steady class but the device)."""
        return max(self.steady_us - self.device_busy_us, 0.0)

    @property
    def ratio(self) -> float:
        """The device's share of the steady part: the number the thresholds judge."""
        return self.account.steady_shares()["device"]

    @property
    def on_cpu(self) -> bool:
        """The CPU's arithmetic plays the device (no device work, some math measured)."""
        return self.account.on_cpu

    @property
    def compute_us(self) -> float:
        return self.device_busy_us if self.on_cpu else 0.0

    @property
    def shares(self) -> dict[str, float]:
        """Each class's share of the window."""
        return self.account.shares()

    @property
    def steady(self) -> dict[str, float]:
        """Each steady class's share of the steady part."""
        return self.account.steady_shares()

    @property
    def set_apart(self) -> str:
        """`the first 473 ms ...`-style words for the window's one-time, profiler and
        untraced time when it is large enough to name (>= 10% of the window), else ''."""
        acc, parts = self.account, []
        for cls, words in (
            ("one_time", "one-time work"),
            ("profiler", "the profiler's own"),
            ("untraced", "nothing recorded"),
        ):
            us = acc.us(cls)
            if self.window_us > 0 and us >= 0.1 * self.window_us:
                cause = _largest(acc.causes.get(cls, {}))
                parts.append(
                    f"{words} {fmt_us(us)} ({fmt_pct(us / self.window_us)}"
                    + (f", mostly {cause}" if cause else "")
                    + ")"
                )
        return "; ".join(parts)

    @property
    def decomposition(self) -> str:
        """The steady classes as shares of the window (the figures `metrics` and `check`
        give), as every renderer words them; those of at least 0.05% (0.0% says nothing)."""
        words = self.account.words()
        return ", ".join(
            f"{words[c]} {fmt_pct(self.shares[c])}" for c in STEADY if self.shares[c] >= 0.0005
        )

    @property
    def host_side(self) -> str:
        """The host-side classes (what held the path while the device idled) as shares of
        the window, the figures `metrics` and `check` give (`analysis.stats.SHARES`)."""
        words = self.account.words()
        return ", ".join(
            f"{words[c]} {fmt_pct(self.shares[c])}" for c in HOST_SIDE if self.shares[c] >= 0.0005
        )

    @property
    def summary(self) -> str:
        """The verdict line: the regime, the numbers behind it, what was set apart."""
        apart = self.set_apart
        tail = f"; set apart: {apart}" if apart else ""
        if self.regime == "not-judged":
            return "not-judged: " + "; ".join(self.reasons)
        if self.regime in ("compile-window", "cold-window"):
            once = self.account.causes.get("one_time", {})
            share = self.account.us("one_time") / self.window_us if self.window_us else 0.0
            what = "compilation" if self.regime == "compile-window" else "one-time work"
            cause = _largest(once)
            longest = ""
            if self.longest_once:
                name, held, at = self.longest_once
                longest = f"; the longest, {name} at +{fmt_us(at)}, held it {fmt_us(held)}"
            return (
                f"{self.regime}: {what} holds {fmt_pct(share)} of the {fmt_us(self.window_us)} "
                f"window"
                + (f" (mostly {cause})" if cause else "")
                + longest
                + ", no steady-state verdict (profile after warm-up)"
                + (f"; the rest of the window: {self.decomposition}" if self.steady_us > 0 else "")
            )
        qualified = f" (qualified: {'; '.join(self.reasons)})" if self.reasons else ""
        where = f" on {self.device}" if self.device else ""
        device = "CPU compute" if self.on_cpu else f"device busy{where}"
        if self.regime == "host-only":
            return (
                f"host-only: no device activity and no op arithmetic; the window: "
                f"{self.decomposition}" + tail + qualified
            )
        rest = f"; while it idled (of the window): {self.host_side}" if self.host_side else ""
        # the judged share is of the steady part; beside it the window's share, the figure
        # the account's bar and `metrics.device_busy_ratio` print, where the two differ
        window = (
            f" ({fmt_pct(self.shares['device'])} of the window)"
            if fmt_pct(self.shares["device"]) != fmt_pct(self.ratio)
            else ""
        )
        return (
            f"{self.regime}: {device} {fmt_us(self.device_busy_us)} = {fmt_pct(self.ratio)} of "
            f"the steady {fmt_us(self.steady_us)}" + window + rest + tail + qualified
        )


def _largest(causes: dict[str, float]) -> str:
    return max(causes, key=causes.get) if causes and max(causes.values()) > 0 else ""


#: Default thresholds of the regime rules (the rules register these same values), so
#: `classify` answers without the rule registry being loaded.
DEFAULTS = {
    "overhead-bound": {"max_device_ratio": 0.25},
    "compute-bound": {"min_device_ratio": 0.8},
    "compile-window": {"min_share": 0.5},
    "cold-window": {"min_share": 0.5},
    "data-bound": {"min_share": 0.3},
    "sync-bound": {"min_share": 0.3},
    "external-wait": {"min_share": 0.3},
}


def _threshold(config: dict, rule_id: str, key: str) -> float:
    return float(config.get(rule_id, {}).get(key, DEFAULTS[rule_id][key]))


def device_label(trace: Trace) -> str | None:
    """The device(s) that ran work; the file lists every GPU on the host, used or not."""
    used = {ln.device for ln in trace.device_lanes if ln.device is not None}
    named = [d for d in trace.devices if d.name]
    names = [d.name for d in named if d.id in used] or [d.name for d in named]
    if not names:
        return None
    if len(set(names)) == 1:
        return names[0] if len(names) == 1 else f"{len(names)}x {names[0]}"
    return ", ".join(sorted(set(names)))


def classify(trace: Trace, config: dict | None = None) -> RegimeCall:
    """The regime of the active window under the configured thresholds."""
    config = config or {}
    account = window_account(trace)
    low = _threshold(config, "overhead-bound", "max_device_ratio")
    high = _threshold(config, "compute-bound", "min_device_ratio")
    min_shares = {
        r: _threshold(config, r, "min_share") for r in ("compile-window", "cold-window", *WAITS)
    }
    # every poor check of the trust grade (clock skew, lost events, the capture's own)
    poor = [i for i in trace.memo(trace_quality).issues if i.level == "poor"]
    withheld = [i.text for i in poor if i.id in WITHHOLD]
    regime = "not-judged" if withheld else _regime(trace, account, low, high, min_shares)
    reasons = withheld or [i.text for i in poor]
    return RegimeCall(
        regime,
        account,
        step_count(trace),
        low,
        high,
        device_label(trace),
        min_shares,
        reasons,
        _longest_once(trace, account),
    )


def _longest_once(trace: Trace, account: WindowAccount) -> tuple[str, float, float] | None:
    """The one-time call holding the most of the window's one-time time."""
    part = account.parts["one_time"]
    if not len(part[0]):
        return None
    idx = np.concatenate([one_time_events(trace, c) for c in ONE_TIME_CAUSES]).astype(np.int64)
    held = sets.covered_between(part, trace.ts[idx], trace.end[idx])
    if not len(idx) or held.max() <= 0:
        return None
    k = int(np.argmax(held))
    return trace.name(int(idx[k])), float(held[k]), trace.rel(trace.ts[idx[k]])


def _regime(
    trace: Trace, account: WindowAccount, low: float, high: float, min_shares: dict[str, float]
) -> str:
    window = account.window_us
    compiling = account.causes.get("one_time", {}).get("compilation", 0.0)
    if window > 0 and compiling >= min_shares["compile-window"] * window:
        return "compile-window"
    once = account.us("one_time")
    if window > 0 and once >= min_shares["cold-window"] * window:
        return "cold-window"
    if account.steady_us <= 0:
        return "cold-window" if once > 0 else "host-only"
    steady = account.steady_shares()
    if steady["device"] < high:
        for regime, cls in WAITS.items():
            rivals = (steady[c] for c in HOST_SIDE if c != cls)
            if steady[cls] >= min_shares[regime] and all(steady[cls] > r for r in rivals):
                return regime
    if account.us("device") <= 0:
        return "host-only"
    if steady["device"] < low:
        return "overhead-bound"
    if steady["device"] >= high:
        return "compute-bound"
    return "mixed"
