"""Regime rules judged on the device's share of the steady window (the window account):
overhead-bound, compute-bound, mixed, host-only. The verdict itself (which regime, for all
regime rules) is `rules.verdict.classify`; the wait regimes are in `rules.regime_waits`,
the window's own (not-judged, compile-window, cold-window) in `rules.regime_window`. On a
CPU run (no device work) the same rules judge the CPU's compute share (`RegimeCall.on_cpu`)
and speak of ops and math libraries, never of kernels, launches or a device.
"""

from __future__ import annotations

import numpy as np

from ..analysis.steps import host_activity_mask, step_stats
from ..analysis.table import window_key_averages
from ..analysis.window import (
    in_window,
    time_by_name,
    window_kernels,
    window_launches,
)
from ..formatting.units import fmt_pct, fmt_us
from ..trace import Trace
from .advice import cuda_graphs_fit, fuse_with_compile
from .base import Evidence, Finding, rule
from .regime_cpu import cpu_compute_bound, cpu_mixed, cpu_overhead_bound
from .roofline import peak_evidence
from .verdict import DEFAULTS, REGIMES, RegimeCall, classify

__all__ = ["REGIMES", "classify"]


def _numbers(call: RegimeCall) -> list[Evidence]:
    """The account's numbers behind every regime: the steady part, the device's share of
    it against the thresholds, and how the rest splits."""
    return [
        Evidence(
            f"steady part of the window: {fmt_us(call.steady_us)} of {fmt_us(call.window_us)} "
            "(one-time, profiler and untraced time set apart)",
            value=call.steady_us,
            unit="us",
        ),
        Evidence(
            f"device busy {fmt_us(call.device_busy_us)} = {fmt_pct(call.ratio)} of the steady "
            f"part (overhead-bound below {fmt_pct(call.overhead_max_ratio, 0)}, compute-bound "
            f"from {fmt_pct(call.compute_min_ratio, 0)})",
            value=call.ratio,
        ),
        Evidence(f"the window account: {call.decomposition}", value=call.host_time_us, unit="us"),
    ]


def _step_anchor(trace: Trace, lowest: bool = True) -> list[Evidence]:
    """The step with the lowest (or highest) device share, to open in Perfetto."""
    if not trace.steps:
        return []
    stats = [s for s in step_stats(trace) if s.host_busy_us > 0]
    if not stats:
        return []
    pick = (min if lowest else max)(stats, key=lambda s: s.device_busy_us / s.host_busy_us)
    share = pick.device_busy_us / pick.host_busy_us
    which = "lowest" if lowest else "highest"
    return [
        Evidence(
            f"{which} device share of the steps: device busy {fmt_us(pick.device_busy_us)} vs "
            f"host busy {fmt_us(pick.host_busy_us)} ({fmt_pct(share)})",
            name=trace.name(pick.index),
            ts_us=trace.rel(pick.start),
            dur_us=pick.dur,
            step=pick.number,
        )
    ]


def _measured(call: RegimeCall, **extra) -> dict:
    return {
        "steady_us": round(call.steady_us, 3),
        "host_time_us": round(call.host_time_us, 3),
        "device_busy_us": round(call.device_busy_us, 3),
        "device_share_of_steady": round(call.ratio, 5),
        **extra,
    }


def _host_overhead_us(call: RegimeCall) -> float:
    """Dispatch and Python while the device idled: what less host work could save."""
    return call.account.us("dispatch") + call.account.us("python")


def _mean_kernel_vs_launch(trace: Trace) -> Evidence | None:
    kernels, launches = window_kernels(trace), window_launches(trace)
    if not len(kernels) or not len(launches):
        return None
    k, ln = float(trace.dur[kernels].mean()), float(trace.dur[launches].mean())
    return Evidence(
        f"mean kernel {fmt_us(k)} vs mean launch call {fmt_us(ln)} "
        f"({len(kernels)} kernels, {len(launches)} launch calls)",
        value=k / ln if ln > 0 else None,
        unit="kernel/launch",
    )


def _top_kernels(trace: Trace, limit: int = 3) -> list[Evidence]:
    """The kernels owning the most time; shares of summed kernel time (streams overlap)."""
    kernels = window_kernels(trace)
    whole = float(trace.dur[kernels].sum())
    out = []
    for name, total in time_by_name(trace, kernels, trace.dur[kernels])[:limit]:
        share = total / whole if whole > 0 else 0.0
        out.append(
            Evidence(
                f"{fmt_us(total)} ({fmt_pct(share)} of kernel time)",
                name=name,
                value=total,
                unit="us",
            )
        )
    return out


@rule(
    "overhead-bound",
    "regime",
    "the device is busy for less than max_device_ratio of the host time",
    **DEFAULTS["overhead-bound"],
)
def overhead_bound(ctx) -> list[Finding]:
    call = classify(ctx.trace, ctx.config)
    if call.regime != "overhead-bound":
        return []
    if call.on_cpu:
        return [cpu_overhead_bound(ctx, call)]
    evidence = _numbers(call)
    table = ctx.analysis(window_key_averages)
    evidence.append(
        Evidence(
            f"Self CPU total {fmt_us(table.self_cpu_total_us)} vs Self device total "
            f"{fmt_us(table.self_device_total_us)}: the last two lines of "
            "key_averages().table(), counting the active window only (self CPU adds up over "
            "threads)",
            value=table.self_device_total_us / table.self_cpu_total_us
            if table.self_cpu_total_us > 0
            else None,
        )
    )
    if (launch := _mean_kernel_vs_launch(ctx.trace)) is not None:
        evidence.append(launch)
    evidence.extend(_step_anchor(ctx.trace))
    return [
        Finding(
            id="overhead-bound",
            severity="warn",
            title=(
                f"Overhead-bound: the device works {fmt_pct(call.ratio)} of the steady part "
                f"(< {fmt_pct(call.overhead_max_ratio, 0)}); dispatch and Python hold "
                f"{fmt_us(_host_overhead_us(call))} while it idles"
            ),
            explanation=(
                "The CPU spends far longer deciding what to run (Python, the dispatcher, "
                "kernel launches) than the device spends running it, so the device mostly "
                "waits. Each kernel is too small to pay for its launch."
            ),
            suggestion=(
                "Give each kernel more work (larger batch or shapes, batched ops), "
                + fuse_with_compile(ctx, "fuse operations (torch.compile)")
                + (
                    ', or replay the step as a CUDA graph (torch.compile(mode="reduce-overhead")).'
                    if cuda_graphs_fit(ctx)
                    else "."
                )
            ),
            impact_us=_host_overhead_us(call) / call.step_count,
            evidence=evidence,
            measured=_measured(call, threshold=call.overhead_max_ratio),
        )
    ]


@rule(
    "compute-bound",
    "regime",
    "the device is busy for at least min_device_ratio of the host time",
    **DEFAULTS["compute-bound"],
)
def compute_bound(ctx) -> list[Finding]:
    call = classify(ctx.trace, ctx.config)
    if call.regime != "compute-bound":
        return []
    if call.on_cpu:
        return [cpu_compute_bound(ctx, call)]
    return [
        Finding(
            id="compute-bound",
            severity="info",
            title=(
                f"Compute-bound: the device is busy {fmt_pct(call.ratio)} of the steady part "
                f"({fmt_us(call.device_busy_us)}, >= {fmt_pct(call.compute_min_ratio, 0)})"
            ),
            explanation=(
                "The device is kept busy: the host issues work faster than the device "
                "finishes it. This is the regime to aim for; the time now goes to the "
                "kernels themselves."
            ),
            suggestion=(
                "Look at the hot kernels' efficiency (achieved FLOP/s or bandwidth vs the "
                "device's peak), lower precision (bf16/fp16, TF32), or fusing memory-bound ops."
            ),
            impact_us=0.0,
            evidence=_numbers(call)
            + _step_anchor(ctx.trace, lowest=False)
            + _top_kernels(ctx.trace)
            + peak_evidence(ctx),
            measured=_measured(call, threshold=call.compute_min_ratio),
        )
    ]


@rule("mixed", "regime", "between overhead-bound and compute-bound")
def mixed(ctx) -> list[Finding]:
    call = classify(ctx.trace, ctx.config)
    if call.regime != "mixed":
        return []
    if call.on_cpu:
        return [cpu_mixed(ctx, call)]
    idle = call.host_time_us
    return [
        Finding(
            id="mixed",
            severity="info",
            title=(
                f"Mixed: the device is busy {fmt_pct(call.ratio)} of the steady part "
                f"({fmt_us(call.device_busy_us)} of {fmt_us(call.steady_us)})"
            ),
            explanation=(
                "Neither side dominates: the device works for a good part of the steady "
                f"window but also sits idle ({fmt_us(idle)}: {call.decomposition}). Part of "
                "the step waits on the host, part on the device."
            ),
            suggestion=(
                "Look at where the device idles: gaps between kernels, host syncs, data "
                "loading (the kernel-gap, host-sync and dataloader-bound findings)."
            ),
            impact_us=idle / call.step_count,
            evidence=_numbers(call)
            + [Evidence("device idle time in the steady part", value=idle, unit="us")]
            + _step_anchor(ctx.trace),
            measured=_measured(
                call,
                overhead_threshold=call.overhead_max_ratio,
                compute_threshold=call.compute_min_ratio,
            ),
        )
    ]


@rule("host-only", "regime", "no device activity and no op arithmetic was recorded")
def host_only(ctx) -> list[Finding]:
    call = classify(ctx.trace, ctx.config)
    if call.regime != "host-only":
        return []
    trace = ctx.trace
    ops = np.flatnonzero(host_activity_mask(trace))
    ops = ops[in_window(trace, trace.ts[ops])]
    evidence = [
        Evidence(
            "host busy time in the active window (while any host thread is busy)",
            value=call.host_time_us,
            unit="us",
        )
    ]
    threads = len(np.unique(trace.lane[ops]))
    summed = f", summed over {threads} threads" if threads > 1 else ""
    for name, total in time_by_name(trace, ops, trace.self_time[ops])[:5]:
        evidence.append(
            Evidence(
                f"self CPU time {fmt_us(total)} in the active window{summed}",
                name=name,
                value=total,
                unit="us",
            )
        )
    return [
        Finding(
            id="host-only",
            severity="info",
            title=(
                f"Host-only: no device activity ({fmt_us(call.host_time_us)} of steady host time)"
            ),
            explanation=(
                "The trace has no GPU lane and none of its ops ran arithmetic of their own "
                "(only annotations, Python or framework calls were recorded), so neither a "
                "device nor the CPU's compute share can be judged."
            ),
            suggestion=(
                "Start with the CPU ops that own the most self time. To see the device, "
                "profile with activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA] "
                "on a machine with a GPU."
            ),
            impact_us=0.0,
            evidence=evidence + peak_evidence(ctx),
            measured=_measured(call),
        )
    ]
