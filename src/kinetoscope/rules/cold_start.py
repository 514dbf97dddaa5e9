"""`cold-start`: one-time costs inside the window, each cause named with its own fix.

A slow first step says that something was cold; the host calls in the trace
say what (analysis/cold_start.py). The first step is slow when it cost more wall
time: the longer of its host window and the run of its device work
(`step_walls`), so extra host time hidden behind a device that runs behind is
no cold start. Advice depends on the window: "warm up" is only useful when the
window has no warmup before it; a run kinetoscope recorded cold (`--warmup 0`)
is called cold; when warm-up iterations ran before it, what is still cold is
named instead (a new shape, a lazily loaded kernel, an allocator that still grows).
"""

from __future__ import annotations

import statistics

from ..analysis.cold_start import (
    FIRST_RUN_EXCESS_US,
    FIRST_RUN_FACTOR,
    ColdCause,
    FirstRun,
    cold_causes,
    first_runs,
    iterations_before_window,
    recorded_cold,
    step_walls,
)
from ..analysis.compile import compiling_steps
from ..analysis.stepmap import step_count, step_of
from ..formatting.units import count, fmt_us
from ..trace import Trace
from .base import Evidence, Finding, NotChecked, event_evidence, rule
from .verdict import ONE_TIME, ONE_TIME_VERDICTS, classify

_WHAT = {
    "module-load": (
        "lazy module loading",
        "the CUDA/HIP driver loads a kernel's module on its first launch",
        "Warm up every code path (each shape and dtype) before measuring; CUDA_MODULE_LOADING="
        "EAGER loads all modules at start-up instead (slower start, no first-launch stalls).",
    ),
    "first-launch": (
        "slow first launches",
        "the first launch of these kernels takes milliseconds: the driver loads and "
        "initialises their module (lazy loading) on first use",
        "Warm up every code path (each shape and dtype) before measuring; CUDA_MODULE_LOADING="
        "EAGER moves the loading to start-up.",
    ),
    "library-setup": (
        "library handles and algorithm search",
        "cuBLAS/cuDNN (hipBLAS/MIOpen) create their handles and, for convolutions in "
        "benchmark mode, time every algorithm on the first call of each shape",
        "Run each input shape once before measuring; with torch.backends.cudnn.benchmark=True "
        "keep shapes fixed (every new shape searches again).",
    ),
    "allocator-growth": (
        "allocator growth",
        "the caching allocator asks the driver for memory only when its pool must grow; a "
        "steady loop reuses blocks and calls none",
        "Warm up until memory stops growing; if it keeps growing, look for tensors kept alive "
        "across steps (record with kinetoscope profile --profile-memory or profile_memory=True; "
        "kinetoscope memory TRACE then shows the timeline).",
    ),
}


def warmup_advice(trace: Trace) -> str:
    """'Warm up' for a window without warmup; a run recorded cold is told so; otherwise what
    can still be cold after the warm-up."""
    before = iterations_before_window(trace)
    if recorded_cold(trace):
        ran = (
            f"only the profiler schedule's {count(before, 'wait/warm-up step')} ran before this "
            "window"
            if before
            else "nothing ran before this window"
        )
        return (
            "This run was recorded cold (--warmup 0): the program ran no warm-up iterations "
            f"of its own, {ran}, so the window shows what a cold start costs. To measure the "
            "steady state, record again with warm-up iterations (kinetoscope profile WORKLOAD "
            "--warmup 3)."
        )
    if before > 1:
        return (
            f"{count(before, 'iteration')} ran before this window, so this is not a missing "
            "warmup: something was still cold (a new input shape or dtype, a code path run for "
            "the first time, memory still growing), or the profiler itself: torch.profiler "
            "starts recording ops and device activity at the first recorded step, and that "
            "step's ops can all run slower (on an H100, matmul_add 64 after 7 iterations: "
            "294 us, every op 2-3x its later time, then 129 and 138 us). Every op slower with "
            "no new call points at the profiler; one call that stands out points at that "
            "call. Make the warmup iterations use the same shapes and code paths as the "
            "measured ones."
        )
    return (
        "Warm up before measuring: run a few iterations before the profiler starts, or use "
        "schedule(wait=1, warmup=1, active=3) so the first steps are not recorded."
    )


def _cause_finding(trace: Trace, cause: ColdCause) -> Finding:
    label, why, fix = _WHAT[cause.kind]
    total = cause.total_us(trace)
    evidence = [
        Evidence(
            f"{trace.name(i)}: {fmt_us(float(trace.dur[i]), 1)}",
            name=trace.name(i),
            ts_us=trace.rel(trace.ts[i]),
            dur_us=float(trace.dur[i]),
            step=step_of(trace, trace.ts[i]),
            value=float(trace.dur[i]),
            unit="us",
        )
        for i in cause.events[:5].tolist()
    ]
    before = iterations_before_window(trace)
    if before > 1 and not recorded_cold(trace):
        fix = (
            f"{count(before, 'iteration')} ran before this window, so the warmup did not cover "
            f"this path (a new shape, dtype or code path). {fix}"
        )
    return Finding(
        id="cold-start",
        severity="warn" if cause.kind != "allocator-growth" else "info",
        title=f"Cold start: {label}, {count(len(cause.events), 'call')} ({fmt_us(total, 1)})",
        explanation=f"One-time cost in the window: {why}. It will not recur in a steady loop.",
        suggestion=fix,
        impact_us=total / step_count(trace),
        evidence=evidence,
        measured={
            "cause": cause.kind,
            "calls": int(len(cause.events)),
            "total_us": round(total, 3),
        },
    )


def _first_run_finding(ctx, cold: list[FirstRun]) -> list[Finding]:
    """A cold first iteration inside a window too short to compare steps: the first run of
    repeated work far slower than its later runs."""
    trace = ctx.trace
    excess = sum(r.excess_us(trace) for r in cold)
    if excess < ctx.threshold("min_first_run_us"):
        return []
    evidence = [
        event_evidence(
            trace,
            r.index,
            f"{trace.name(r.index)}: first run {fmt_us(float(trace.dur[r.index]), 1)} vs "
            f"{fmt_us(r.later_median_us, 1)} median of its {r.runs - 1} later runs "
            f"({float(trace.dur[r.index]) / r.later_median_us:.1f}x)",
            step=step_of(trace, trace.ts[r.index]),
            value=r.excess_us(trace),
            unit="us",
        )
        for r in cold[:5]
    ]
    return [
        Finding(
            id="cold-start",
            severity="warn",
            title=(
                f"Cold start: first iteration, {count(len(cold), 'first run')} of repeated "
                f"kernels or launches far slower than later runs ({fmt_us(excess, 1)} extra)"
            ),
            explanation=(
                "The same kernel (same name, grid and block) or its launch ran several times in "
                f"this window, and its first run took >= {FIRST_RUN_FACTOR:g}x and >= "
                f"{FIRST_RUN_EXCESS_US:g} us more than the median of its later runs: the first "
                "iteration was cold (module loading, cold instruction caches and TLBs, clocks "
                "ramping up). With a single step in the window this inflates the measurement."
            ),
            suggestion=warmup_advice(trace),
            impact_us=excess / step_count(trace),
            evidence=evidence,
            measured={
                "cause": "first-run",
                "cold_runs": len(cold),
                "excess_us": round(excess, 3),
                "threshold_us": ctx.threshold("min_first_run_us"),
            },
        )
    ]


def _first_step(ctx) -> list[Finding]:
    trace, steps = ctx.trace, ctx.trace.steps
    first = steps[0]
    if first.number in compiling_steps(trace):
        return []  # its extra time is torch.compile compiling: compilation-in-window says so
    walls = step_walls(trace)
    cost, later = walls[0], walls[1:]
    median = statistics.median(w.wall_us for w in later)
    factor = cost.wall_us / median if median > 0 else 0.0
    limit = ctx.threshold("factor")
    slowest = max(w.wall_us for w in later)
    if factor <= limit or cost.wall_us <= ctx.threshold("over_slowest") * slowest:
        # a later step as slow as the first says its slowness recurs: no one-time cost
        return []
    device = (
        f" (its device work ran {fmt_us(cost.device_us)}, host {fmt_us(cost.host_us)})"
        if trace.has_device
        else ""
    )
    cold = " (recorded cold, warm-up 0)" if recorded_cold(trace) else ""
    evidence = [
        Evidence(
            f"step duration{' (first step)' if s is first else ''}",
            name=trace.name(s.index),
            ts_us=trace.rel(s.start),
            dur_us=s.dur,
            step=s.number,
        )
        for s in steps
    ]
    return [
        Finding(
            id="cold-start",
            severity="warn",
            title=(
                f"Cold start{cold}: step #{first.number} takes {fmt_us(cost.wall_us)}{device}, "
                f"{factor:.1f}x the median of the later steps ({fmt_us(median)}; threshold "
                f"{limit:g}x)"
            ),
            explanation=(
                "The first profiled step pays one-time costs (workspace allocation, library "
                + (
                    "heuristics such as cuBLAS picking an algorithm, lazy module loading, "
                    if trace.has_device
                    else "setup such as the BLAS or oneDNN picking a kernel for a shape, "
                )
                + "allocator growth). They will not recur, but they inflate every average "
                "taken over this window. A step's time here is the longer of its host window "
                "and the run of the device work it launched: host time hidden behind a busy "
                "device costs nothing."
            ),
            suggestion=warmup_advice(trace),
            impact_us=(cost.wall_us - median) / len(steps),
            evidence=evidence,
            cause=(f"step:{first.number}",),
            measured={
                "cause": "first-step",
                "first_step_us": round(cost.wall_us, 3),
                "first_step_host_us": round(cost.host_us, 3),
                "first_step_device_us": round(cost.device_us, 3),
                "median_later_us": round(median, 3),
                "factor": round(factor, 3),
                "threshold": limit,
            },
        )
    ]


@rule(
    "cold-start",
    "cpu-lane",
    "one-time costs in the window: a slow first step, lazy loading, library setup, allocations",
    factor=1.5,
    over_slowest=1.0,
    min_steps=3,
    min_first_run_us=100.0,
)
def cold_start(ctx) -> list[Finding]:
    found = _cold_start(ctx)
    if classify(ctx.trace, ctx.config).regime in ONE_TIME_VERDICTS:
        # the verdict is this cause, call by call: one finding (rules.merge folds these
        # into it); elsewhere each one-time cause keeps its own finding and fix
        for f in found:
            f.cause = (ONE_TIME,)
    return found


def _cold_start(ctx) -> list[Finding]:
    trace = ctx.trace
    cold = cold_causes(trace)
    causes = [_cause_finding(trace, c) for c in cold]
    min_steps = int(ctx.threshold("min_steps"))
    if len(trace.steps) >= min_steps:
        # one-time calls all inside the first step are part of that step's cost (rules.merge)
        first = trace.steps[0]
        for cause, finding in zip(cold, causes, strict=True):
            ts = trace.ts[cause.events]
            if ((ts >= first.start) & (ts < first.end)).all():
                finding.cause = (f"step:{first.number}",)
        return _first_step(ctx) + causes
    if len(trace.steps) <= 1:  # a single window: its repeats are the only comparison left
        runs = first_runs(trace)
        found = _first_run_finding(ctx, runs)
        # a slow first launch that is also a cold first run is one cost, seen twice
        ran = {r.index for r in runs}
        for cause, finding in zip(cold, causes, strict=True):
            if found and cause.kind == "first-launch" and ran & set(cause.events.tolist()):
                finding.cause = found[0].cause = ("first-use",)
        causes += found
    if causes:
        return causes
    if not trace.steps:
        raise NotChecked(
            "no ProfilerStep#N windows in the trace",
            "profile with schedule=torch.profiler.schedule(wait=1, warmup=1, active=3) and call "
            "prof.step() once per iteration",
        )
    raise NotChecked(
        f"needs at least {min_steps} profiled steps, the trace has {len(trace.steps)}",
        "profile more active steps (schedule active=3 or more)",
    )
