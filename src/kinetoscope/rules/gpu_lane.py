"""GPU-lane rules: what the device timeline says (docs/rules.md, "GPU lane")."""

from __future__ import annotations

from collections import Counter

import numpy as np

from ..analysis.account import sets
from ..analysis.account.account import window_account
from ..analysis.compile import compile_events, during_compilation
from ..analysis.gpu_lane import (
    Gap,
    buffer_requests,
    busy_while_waiting,
    kernel_gaps,
    launch_latency,
)
from ..analysis.kernel_names import decoded
from ..analysis.resolution import timestamp_resolution
from ..analysis.stepmap import device_steps, mean_step_us, step_count, step_or_none
from ..formatting.units import count, fmt_us
from ..trace import Trace
from .advice import cuda_graphs_fit
from .base import Evidence, Finding, NotChecked, rule
from .quality import above_resolution
from .requires import NO_LINKS, need_device
from .verdict import classify


@rule(
    "profiler-buffer-request",
    "gpu-lane",
    "the profiler refilling its own CUPTI buffers on the device lane",
)
def profiler_buffer_request(ctx) -> list[Finding]:
    trace = ctx.trace
    reqs = buffer_requests(trace)
    if not len(reqs):
        return []
    total = float(trace.dur[reqs].sum())
    first_kernel = float(trace.ts[trace.kernels[0]]) if len(trace.kernels) else None
    evidence = [
        Evidence(
            f"Activity Buffer Request at {fmt_us(trace.rel(trace.ts[i]), 1)} for "
            f"{fmt_us(trace.dur[i], 1)}",
            name=trace.name(i),
            ts_us=trace.rel(trace.ts[i]),
            dur_us=float(trace.dur[i]),
            value=float(trace.dur[i]),
            unit="us",
        )
        for i in reqs[:5].tolist()
    ]
    explanation = (
        f"The trace holds {len(reqs)} 'Activity Buffer Request' event(s), {fmt_us(total, 1)} in "
        "all: the profiler (CUPTI) asking for fresh buffers to store the activity records. "
        "It is the profiler's own work, not your program's."
    )
    first = int(reqs[0])
    if first_kernel is not None and trace.ts[first] <= first_kernel:
        explanation += (
            f" The first one ends {fmt_us(first_kernel - trace.end[first], 1)} before the first "
            "kernel starts: it explains the initial offset between the CPU and GPU lanes."
        )
    return [
        Finding(
            id="profiler-buffer-request",
            severity="info",
            title=(
                f"{count(len(reqs), 'profiler buffer request')} on the device lane "
                f"({fmt_us(total, 0)})"
            ),
            explanation=explanation,
            suggestion=(
                "Ignore the idle time they cover; profile more active steps (schedule with "
                "warmup) so a one-time buffer request does not dominate a short window."
            ),
            impact_us=0.0,
            evidence=evidence,
            measured={"count": int(len(reqs)), "total_us": round(total, 3)},
        )
    ]


@rule(
    "launch-latency",
    "gpu-lane",
    "time from a launch call to its kernel's start is large or grows",
    p50_us=50.0,
    growth=2.0,
    queue_depth=2.0,
    busy_share=0.5,
)
def launch_latency_rule(ctx) -> list[Finding]:
    trace = ctx.trace
    need_device(trace)
    lat = launch_latency(trace)
    if len(lat) < 2:
        raise NotChecked(*NO_LINKS)
    values = lat.latency
    p50, p90, pmax = (float(v) for v in np.percentile(values, [50, 90, 100]))
    tenth = max(len(values) // 5, 1)
    head, tail = float(np.median(values[:tenth])), float(np.median(values[-tenth:]))
    depth50 = float(np.median(lat.queue_depth))
    head = max(head, timestamp_resolution(trace).coarsest_us)  # below it, 0 is a rounding
    growth = tail / head if head > 0 else float("inf") if tail > 0 else 1.0
    large = p50 > ctx.threshold("p50_us") and above_resolution(ctx, p50)
    grows = growth > ctx.threshold("growth") and tail - head > ctx.threshold("p50_us")
    grows = grows and above_resolution(ctx, tail - head)
    if not (large or grows):
        return []
    # a full queue delays a kernel only while the device works through what is ahead of it:
    # queued kernels that wait on an idle device wait on something else
    busy = busy_while_waiting(trace, lat)
    waited = float(np.clip(values, 0, None).sum())
    busy_share = float(busy.sum()) / waited if waited > 0 else 0.0
    queued = depth50 >= ctx.threshold("queue_depth") and busy_share >= ctx.threshold("busy_share")
    first = int(lat.device[0])
    evidence = [
        Evidence(
            f"launch -> start latency p50 {fmt_us(p50, 1)}, p90 {fmt_us(p90, 1)}, max "
            f"{fmt_us(pmax, 1)} over {len(values)} launch calls "
            f"(threshold p50 {fmt_us(ctx.threshold('p50_us'), 0)})",
            value=p50,
            unit="us",
        ),
        Evidence(
            f"first fifth of the window: median {fmt_us(head, 1)}; last fifth: {fmt_us(tail, 1)} "
            f"({growth:.1f}x, threshold {ctx.threshold('growth'):.1f}x)",
            value=growth,
        ),
        Evidence(
            f"first kernel starts {fmt_us(values[0], 1)} after its launch call",
            name=trace.name(first),
            ts_us=trace.rel(trace.ts[first]),
            dur_us=float(trace.dur[first]),
            step=step_or_none(int(device_steps(trace, np.array([first]))[0])),
            value=float(values[0]),
            unit="us",
        ),
        Evidence(
            f"kernels already queued at launch time: median {depth50:.0f}, "
            f"max {int(lat.queue_depth.max())}",
            value=depth50,
        ),
        Evidence(
            f"device busy {busy_share:.0%} of the time kernels waited after their launch "
            f"(threshold {ctx.threshold('busy_share'):.0%} to call the queue full)",
            value=busy_share,
            unit="share",
        ),
    ]
    measured = {
        "p50_us": round(p50, 3),
        "p90_us": round(p90, 3),
        "max_us": round(pmax, 3),
        "growth": round(growth, 3) if np.isfinite(growth) else None,
        "queue_depth_p50": depth50,
        "busy_share_while_waiting": round(busy_share, 4),
        "threshold_p50_us": ctx.threshold("p50_us"),
        "threshold_growth": ctx.threshold("growth"),
        "threshold_busy_share": ctx.threshold("busy_share"),
    }
    if queued:
        regime = classify(trace, ctx.config).regime
        return [
            Finding(
                id="launch-latency",
                severity="info",
                title=(
                    f"kernels start {fmt_us(p50, 0)} (median) after their launch: the queue is full"
                ),
                explanation=(
                    "The host enqueues kernels faster than the device runs them, so each new "
                    f"kernel waits behind a median of {depth50:.0f} others; the device is busy "
                    f"{busy_share:.0%} of the time they wait. While the queue is full the "
                    "device sets the pace"
                    + (
                        ", which is what you want."
                        if regime == "compute-bound"
                        else f"; the window as a whole is {regime}: its idle time lies "
                        "elsewhere (the verdict says where)."
                    )
                ),
                suggestion=(
                    "Nothing to fix in the launch path; look at the top kernels' efficiency "
                    "(kernel-name, achieved FLOP/s) to go faster"
                    + ("." if regime == "compute-bound" else ", and at the verdict's idle time.")
                ),
                impact_us=0.0,
                evidence=evidence,
                measured=measured,
            )
        ]
    # what a fix recovers: the part of each wait beyond a normal launch that the window
    # account gives the host's steady classes (the device idle; one-time work such as lazy
    # module loading, waits outside the trace and data waits have findings of their own)
    excess = _waits_held_by_host(trace, lat, ctx.threshold("p50_us")) / step_count(trace)
    excess = min(excess, mean_step_us(trace))
    queue = (
        "Almost nothing is queued on the device when kernels are launched"
        if depth50 < ctx.threshold("queue_depth")
        else f"A median of {depth50:.0f} kernels is queued at each launch, but the device is "
        f"busy only {busy_share:.0%} of the time they wait, so the queue is not what holds "
        "them back"
    )
    return [
        Finding(
            id="launch-latency",
            severity="warn",
            title=f"kernels start {fmt_us(p50, 0)} (median) after their launch with an idle device",
            explanation=(
                f"{queue}, yet they start a median {fmt_us(p50, 0)} after the launch call. The "
                "device waits on the launch path itself (driver, runtime, lazy module loading, "
                "host contention), on an event from another stream or process, or on work the "
                "runtime submits only later (a queue flushed at the next synchronize)."
            ),
            suggestion=(
                "Check for first-call costs (warm up before profiling), CPU contention and "
                "frequency scaling on the host; batch work into fewer, larger kernels"
                + (
                    " or use CUDA graphs to pay the launch path once."
                    if cuda_graphs_fit(ctx)
                    else "."
                )
            ),
            impact_us=excess,
            evidence=evidence,
            measured=measured,
        )
    ]


def queued_before(trace: Trace, kernel: int, t: float) -> bool:
    """The launch call of `kernel` had returned by `t`: it was queued before then."""
    launch = int(trace.launch_of[kernel])
    return launch >= 0 and float(trace.end[launch]) <= t


#: What holds the host in a gap a host-side fix can close: the data wait and the waits
#: on other processes have findings of their own (dataloader-bound, external-wait).
GAP_CLASSES = ("python", "dispatch", "sync_stall")


def _waits_held_by_host(trace: Trace, lat, normal_us: float) -> float:
    lo, hi = trace.ts[lat.launch] + normal_us, trace.ts[lat.device]
    waiting = sets.of(lo, hi)
    account = window_account(trace)
    host = sets.union(*(account.parts[c] for c in GAP_CLASSES))
    return sets.length(sets.meet(waiting, host))


def host_held_us(trace: Trace, gaps: list[Gap]) -> float:
    """The time inside `gaps` that the window account gives the host's Python, dispatch
    and sync stalls: what a fix on the host could give back."""
    if not gaps:
        return 0.0
    account = window_account(trace)
    host = sets.union(*(account.parts[c] for c in GAP_CLASSES))
    inside = sets.of(np.array([g.start for g in gaps]), np.array([g.end for g in gaps]))
    return sets.length(sets.meet(inside, host))


@rule(
    "kernel-gap",
    "gpu-lane",
    "idle gaps between consecutive kernels of a step",
    min_gap_us=10.0,
    ratio=5.0,
)
def kernel_gap(ctx) -> list[Finding]:
    trace = ctx.trace
    need_device(trace)
    per_step = kernel_gaps(trace)
    min_gap, ratio = ctx.threshold("min_gap_us"), ctx.threshold("ratio")
    resolution = timestamp_resolution(trace).device_us or 0.0
    flagged = []
    compiling = ctx.analysis(compile_events)
    for gaps in per_step.values():
        if not len(gaps):
            continue
        durs = gaps.dur
        # a median gap below one timestamp step reads as 0: floor it at the step
        median = max(float(np.median(durs)), resolution)
        # the size tests on the array first: most of a step's gaps are short
        for k in np.flatnonzero((durs > min_gap) & (durs > ratio * median)).tolist():
            g = gaps.gap(k)
            # the device idles while Dynamo/Inductor compile: compilation's cost, reported there
            if during_compilation(trace, compiling, g.start, g.end):
                continue
            # the kernel after the gap was enqueued before the gap began: the host was
            # ahead, so the device waited on something else (a dependency), not the host
            if queued_before(trace, g.after, g.start):
                continue
            if above_resolution(ctx, g.dur, "device"):
                flagged.append((g, median))
    if not flagged:
        return []
    pairs = Counter((int(trace.name_id[g.before]), int(trace.name_id[g.after])) for g, _ in flagged)

    def recurs(g: Gap) -> bool:
        return pairs[(int(trace.name_id[g.before]), int(trace.name_id[g.after]))] > 1

    reqs = buffer_requests(trace)
    # recurring gaps first (a steady cost), then the longest
    flagged.sort(key=lambda gm: (not recurs(gm[0]), -gm[0].dur))
    evidence = []
    for g, median in flagged[:5]:
        pair = (int(trace.name_id[g.before]), int(trace.name_id[g.after]))
        note = f"recurs {pairs[pair]}x" if pairs[pair] > 1 else "once"
        if len(reqs) and np.any((trace.ts[reqs] < g.end) & (trace.end[reqs] > g.start)):
            note += ", overlaps an Activity Buffer Request"
        before, after = (decoded(trace, trace.name(i)).short for i in (g.before, g.after))
        evidence.append(
            Evidence(
                f"{fmt_us(g.dur, 1)} idle after {before} before {after} (step median gap "
                f"{fmt_us(median, 1)}; {note})",
                name=trace.name(g.after),
                ts_us=trace.rel(g.start),
                dur_us=g.dur,
                step=g.step,
                value=g.dur,
                unit="us",
            )
        )
    total = sum(g.dur for g, _ in flagged)
    steady = [g for g, _ in flagged if recurs(g)]
    recurring = len(steady)
    if recurring:
        explanation = (
            f"{count(len(flagged), 'idle gap')} longer than {fmt_us(min_gap, 0)} and "
            f"{ratio:.0f}x the "
            "step's "
            f"median gap; {recurring} of them recur between the same two kernels, which points to "
            "a real host stall (a sync, a data wait, Python work) that starves the device."
        )
        suggestion = (
            "Look at the host timeline during the gap (what runs between the two launches); "
            "remove syncs and host work there or overlap them with device work."
        )
    else:
        explanation = (
            f"{count(len(flagged), 'idle gap')} longer than {fmt_us(min_gap, 0)} and "
            f"{ratio:.0f}x the "
            "step's "
            "median gap, each seen once: likely a one-time event such as a profiler buffer "
            "request or a lazy initialization rather than a steady stall."
        )
        suggestion = (
            "Confirm with more active steps before optimizing; a one-time gap is not a steady cost."
        )
    return [
        Finding(
            id="kernel-gap",
            severity="warn" if recurring else "info",
            title=f"{count(len(flagged), 'long idle gap')} between kernels ({fmt_us(total, 0)})",
            explanation=explanation,
            suggestion=suggestion,
            # only the recurring gaps are a per-step cost, and only their time the account
            # gives the host's steady classes (not one-time, profiler or untraced time)
            impact_us=host_held_us(trace, steady) / step_count(trace),
            evidence=evidence,
            measured={
                "gaps": len(flagged),
                "longest_us": round(max(g.dur for g, _ in flagged), 3),
                "total_us": round(total, 3),
                "recurring": recurring,
                "threshold_min_gap_us": min_gap,
                "threshold_ratio": ratio,
            },
        )
    ]
