"""Regime: one verdict per trace.

All regime rules read the same `classify` call, and so does the report's
verdict, so exactly one of them fires and it always agrees with the verdict
line. They are tried in this order:

1. `compile-window`: torch.compile compiled for at least `min_share` of the
   window; no steady-state verdict can be given.
2. `data-bound` / `sync-bound`: the host-time decomposition
   (`analysis.hosttime`) says the step mostly waits for the next batch, or
   blocks in real device syncs: that wait is at least `min_share` of the
   window and larger than every other part, where dispatch and Python/other
   count only while the device idles (host work hidden under device work sets
   no pace). Neither fires when the device is busy for at least
   `compute-bound.min_device_ratio` of the window: then the device is the
   bottleneck and the host merely waits for it.
3. `overhead-bound`, `compute-bound`, `mixed`, `host-only`: device busy
   time over host time in the active window (the series compares Self device
   total to Self CPU total). On a trace without device work the CPU is the
   device: the share of the window spent in the math ops' self time
   (`analysis.cpu_compute`: the GEMM inside `aten::mm`, the loop inside
   `aten::add`) plays device busy / host time, against the same thresholds;
   everything else in the step (Python, the dispatcher, composite ops) is the
   overhead that keeps the math units idle. `host-only` is left for a trace
   without device work whose ops do no measurable math.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..analysis.stats import decomposition_text, trace_stats
from ..analysis.stepmap import step_count
from ..formatting.units import fmt_pct, fmt_us
from ..trace import Trace

REGIMES = (
    "compile-window",
    "data-bound",
    "sync-bound",
    "overhead-bound",
    "compute-bound",
    "mixed",
    "host-only",
)


@dataclass(frozen=True)
class RegimeCall:
    regime: str
    host_time_us: float
    device_busy_us: float
    #: device busy / host time (device busy / window where no host time was recorded)
    ratio: float
    window_us: float
    step_count: int
    overhead_max_ratio: float
    compute_min_ratio: float
    device: str | None
    #: window shares of the host-time parts and of compilation (`TraceStats.shares`)
    shares: dict[str, float]
    #: device busy / window time
    device_window_ratio: float
    #: the wait share a wait regime needs, and compile-window's share (for evidence)
    min_shares: dict[str, float]
    #: math-op self time in the window on a trace without device work (0 with a device)
    compute_us: float = 0.0

    @property
    def on_cpu(self) -> bool:
        """The CPU's arithmetic plays the device (no device work, some math measured)."""
        return self.device_busy_us <= 0 and self.compute_us > 0

    @property
    def decomposition(self) -> str:
        return decomposition_text(self.shares)

    @property
    def summary(self) -> str:
        """The verdict line: the regime, the numbers behind it, the host-time decomposition."""
        where = f" on {self.device}" if self.device else ""
        host = f"; host time: {self.decomposition}"
        if self.regime == "compile-window":
            return (
                "compile-window: torch.compile compiled for "
                f"{fmt_pct(self.shares['compile_share'])} of the window, no steady-state "
                "verdict (profile after warmup)" + host
            )
        if self.regime in ("data-bound", "sync-bound"):
            device = (
                f"device busy {fmt_pct(self.device_window_ratio)} of the window{where}"
                if self.device_busy_us > 0
                else "no device activity"
            )
            if self.on_cpu:
                device = f"CPU compute {fmt_pct(self.ratio)} of the window"
            return f"{self.regime}: {self.decomposition}; {device}"
        if self.regime == "host-only":
            return (
                f"host-only: {fmt_us(self.host_time_us)} of host time and no device activity "
                "recorded" + host
            )
        if self.on_cpu:
            return (
                f"{self.regime}: CPU compute (self time of the ops doing the math) "
                f"{fmt_us(self.compute_us)} = {fmt_pct(self.ratio)} of the "
                f"{fmt_us(self.window_us)} window, no device" + host
            )
        if self.ratio > 1:  # the host queued ahead: "640% of host" reads as a fault
            return (
                f"{self.regime}: device busy {fmt_us(self.device_busy_us)} = {self.ratio:.2f}x "
                f"host {fmt_us(self.host_time_us)}{where} (more device work than host "
                "time: the device sets the pace)" + host
            )
        return (
            f"{self.regime}: device busy {fmt_us(self.device_busy_us)} = {fmt_pct(self.ratio)} "
            f"of host {fmt_us(self.host_time_us)}{where}" + host
        )


#: Default thresholds of the regime rules (the rules register these same values), so
#: `classify` answers without the rule registry being loaded.
DEFAULTS = {
    "overhead-bound": {"max_device_ratio": 0.25},
    "compute-bound": {"min_device_ratio": 0.8},
    "compile-window": {"min_share": 0.5},
    "data-bound": {"min_share": 0.3},
    "sync-bound": {"min_share": 0.3},
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
    stats = trace_stats(trace)
    m = stats.metrics()
    host, device, window = m["host_time_us"], m["device_busy_us"], m["window_us"]
    ratio, busy = m["device_to_host_ratio"], m["device_busy_ratio"]
    compute = m["compute_share"] * window
    if device <= 0 and compute > 0:
        # a CPU run: the math units are the device, the rest of the window the overhead
        ratio = busy = m["compute_share"]
    low = _threshold(config, "overhead-bound", "max_device_ratio")
    high = _threshold(config, "compute-bound", "min_device_ratio")
    shares = stats.shares()
    min_shares = {
        "compile-window": _threshold(config, "compile-window", "min_share"),
        "data-bound": _threshold(config, "data-bound", "min_share"),
        "sync-bound": _threshold(config, "sync-bound", "min_share"),
    }
    device_saturated = busy >= high
    if shares["compile_share"] >= min_shares["compile-window"]:
        regime = "compile-window"
    elif not device_saturated and _dominant_wait(shares, "data_share", min_shares["data-bound"]):
        regime = "data-bound"
    elif not device_saturated and _dominant_wait(shares, "sync_share", min_shares["sync-bound"]):
        regime = "sync-bound"
    elif (not trace.has_device or device <= 0) and compute <= 0:
        regime = "host-only"
    elif ratio < low:
        regime = "overhead-bound"
    elif ratio >= high:
        regime = "compute-bound"
    else:
        regime = "mixed"
    return RegimeCall(
        regime,
        host,
        device,
        ratio,
        window,
        step_count(trace),
        low,
        high,
        device_label(trace),
        shares,
        m["device_busy_ratio"],
        min_shares,
        compute,
    )


def _dominant_wait(shares: dict[str, float], key: str, min_share: float) -> bool:
    """The wait `key` is at least `min_share` of the window and larger than every other
    part, dispatch and Python/other counted only while the device idled."""
    rivals = (
        "data_share",
        "sync_share",
        "compute_share",
        "dispatch_exposed_share",
        "other_exposed_share",
    )
    return shares[key] >= min_share and all(shares[key] > shares[r] for r in rivals if r != key)
