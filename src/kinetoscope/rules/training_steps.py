"""Training-loop health, per step: slow steps (`step-outlier`), where the device sat
idle (`gpu-idle-breakdown`) and whether the window holds enough steady steps
(`profiling-window`). Same family as `rules.training` (data and sync waits); kept
apart because these rules read step statistics and idle splits, not wait sites.
"""

from __future__ import annotations

from collections import defaultdict
from statistics import median

from ..analysis.compile import compiling_steps
from ..analysis.dataloader import data_waits
from ..analysis.idle import (
    CATEGORIES,
    DeviceIdle,
    IdleSplit,
    StreamIdle,
    device_idle,
    idle_breakdown,
)
from ..analysis.stats import OUTLIER_FACTOR, OUTLIER_MIN_STEPS, step_outliers
from ..analysis.steps import step_stats
from ..analysis.syncs import sync_sites
from ..formatting.units import count, fmt_us
from .advice import compiled_run, cuda_graphs_fit
from .base import Evidence, Finding, NotChecked, rule
from .training import FAMILY

#: The idle split's categories in plain words (HTA's host_wait / kernel_wait / other).
_CATEGORY_WORDS = {
    "host_wait": "waiting for the host",
    "kernel_wait": "short gaps between kernels",
    "other": "other",
}

_STEP_ADVICE = (
    "record at least 3 steps: call prof.step() once per iteration inside "
    "torch.profiler.profile(schedule=torch.profiler.schedule(wait=1, warmup=1, active=3))"
)


@rule(
    "step-outlier",
    FAMILY,
    "a step lasts much longer than the median step",
    ratio=OUTLIER_FACTOR,
    min_steps=OUTLIER_MIN_STEPS,
)
def step_outlier(ctx) -> list[Finding]:
    trace = ctx.trace
    min_steps = int(ctx.threshold("min_steps"))
    if len(trace.steps) < min_steps:
        raise NotChecked(
            f"{count(len(trace.steps), 'ProfilerStep')} recorded, {min_steps} needed to compare "
            "steps",
            _STEP_ADVICE,
        )
    stats = ctx.analysis(step_stats)
    # the one outlier count every command shows (analysis.stats): the median is over all
    # steps, and a slow first step counts too (cold-start explains its one-time costs);
    # a step's length is its step time (the device's where it outlasts the host's window)
    med = median(s.time_us for s in stats)
    ratio = ctx.threshold("ratio")
    # a step that compiled is slow because torch.compile ran: compilation-in-window's evidence
    flagged = {number for number, _ in step_outliers(stats, ratio)} - compiling_steps(trace)
    slow = [s for s in stats if s.number in flagged]
    if not slow:
        return []
    parts = _step_parts(ctx)
    typical = {k: median(parts[s.number][k] for s in stats) for k in _PART_NAMES}
    evidence = []
    for s in sorted(slow, key=lambda s: -s.time_us):
        diffs = {k: parts[s.number][k] - typical[k] for k in _PART_NAMES}
        cause = max(diffs, key=lambda k: diffs[k])
        what = (
            f"{_PART_NAMES[cause]} +{fmt_us(diffs[cause])} vs the median step"
            if diffs[cause] > 0.25 * (s.time_us - med)
            else "no single cause stands out (host and device both slower)"
        )
        if s is stats[0]:
            what += " (the first profiled step: one-time costs, see cold-start)"
        evidence.append(
            Evidence(
                f"{fmt_us(s.time_us)} = {s.time_us / med:.2f}x the median {fmt_us(med)}; {what}",
                name=f"ProfilerStep#{s.number}",
                ts_us=trace.rel(s.start),
                dur_us=s.dur,
                step=s.number,
                value=s.time_us / med,
                unit="x median",
            )
        )
    worst = max(s.time_us for s in slow)
    return [
        Finding(
            id="step-outlier",
            severity="warn" if worst > 2 * med else "info",
            title=f"{len(slow)} of {len(stats)} steps are over {ratio:g}x the median step",
            explanation=(
                "Most steps take about the same time, but some take much longer. Averages hide "
                "this; the slow steps point at something that happens only sometimes: a sync, a "
                "wait for data, a recompilation, a checkpoint, garbage collection."
            ),
            suggestion=(
                "Open the slow step in Perfetto next to a typical one and compare (the evidence "
                "names the part that grew). Periodic work (logging, checkpoints, evaluation) "
                "belongs outside the profiled window or behind a flag."
            ),
            impact_us=sum(s.time_us - med for s in slow) / len(stats),
            evidence=evidence,
            # the slow steps themselves: a cold first step alone is cold-start's cause too
            cause=tuple(f"step:{s.number}" for s in sorted(slow, key=lambda s: s.start)),
            measured={
                "median_step_us": round(med, 1),
                "worst_ratio": round(worst / med, 3),
                "ratio": ratio,
                "steps_compared": len(stats),
            },
        )
    ]


_PART_NAMES = {
    "data_us": "DataLoader wait",
    "sync_us": "host-device syncs",
    "device_busy_us": "device busy time",
    "host_busy_us": "host busy time",
}


def _step_parts(ctx) -> dict[int | None, dict[str, float]]:
    """Per step: where its time went, to name what makes an outlier slow."""
    parts: dict[int | None, dict[str, float]] = {}
    for s in ctx.analysis(step_stats):
        parts[s.number] = {
            "data_us": 0.0,
            "sync_us": 0.0,
            "device_busy_us": s.device_busy_us,
            "host_busy_us": s.host_busy_us,
        }
    for w in ctx.analysis(data_waits):
        if w.step in parts:
            parts[w.step]["data_us"] = w.wait_us
    for site in ctx.analysis(sync_sites):
        if site.step in parts:
            parts[site.step]["sync_us"] += site.wait_us
    return parts


@rule(
    "gpu-idle-breakdown",
    FAMILY,
    "device idle time (no stream busy) split into host wait, kernel-to-kernel gaps and other",
    min_idle_share=0.2,
    kernel_gap_us=30.0,
)
def gpu_idle_breakdown(ctx) -> list[Finding]:
    trace = ctx.trace
    if not trace.has_device:
        raise NotChecked(
            "no device activity in the trace",
            "profile with ProfilerActivity.CUDA (or the ROCm equivalent) on a GPU machine",
        )
    gap = ctx.threshold("kernel_gap_us")
    graphs = cuda_graphs_fit(ctx)  # replaying launches helps only a steady overhead-bound window
    compiled = compiled_run(ctx)  # no advice to compile a run that compiles
    devices = device_idle(trace, gap)
    total = IdleSplit()
    for dev in devices:
        total.add(dev.window)
    # idle + busy is the window (per device), so the share is of the window itself
    span = total.busy + total.idle
    share = total.idle / span if span > 0 else 0.0
    min_share = ctx.threshold("min_idle_share")
    if share < min_share:
        return []
    dominant = total.dominant
    evidence = [_device_evidence(trace, dev, len(devices)) for dev in devices]
    evidence += _stream_evidence(trace, idle_breakdown(trace, gap))
    # a breakdown, not a cause: it warns when the host starves the device most of the time,
    # but saves nothing itself; what the host does instead (dispatch, data, syncs) is what a
    # fix removes, and those findings carry the saving
    severity = "warn" if dominant == "host_wait" and share >= 0.5 else "info"
    by_step: dict[int | None, IdleSplit] = defaultdict(IdleSplit)
    for dev in devices:
        for number, split in dev.by_step.items():
            by_step[number].add(split)
    for number, split in sorted(by_step.items(), key=lambda kv: -kv[1].idle)[:5]:
        if number is None or split.idle <= 0:
            continue
        step = next(s for s in trace.steps if s.number == number)
        evidence.append(
            Evidence(
                f"device idle {fmt_us(split.idle)} of the {fmt_us(step.dur)} step "
                f"({_split_text(split)})",
                name=f"ProfilerStep#{number}",
                ts_us=trace.rel(step.start),
                dur_us=step.dur,
                step=number,
                value=split.idle,
                unit="us",
            )
        )
    where = "the steps" if trace.steps else "the window"
    return [
        Finding(
            id="gpu-idle-breakdown",
            severity=severity,
            title=(
                f"Device idle {share:.0%} of {where} (no stream busy); mostly "
                f"{dominant.replace('_', ' ')} ({total.share(dominant):.0%} of the idle time)"
            ),
            explanation=(
                "The device is idle when none of its streams runs anything; idle and busy add "
                f"up to {where}. Each idle gap is split the way HolisticTraceAnalysis splits a "
                "stream's gaps, by the work that ends it: host wait (the host enqueued it only "
                "after the device ran dry: the host is too slow), kernel wait (gaps under "
                f"{gap:g} us between back-to-back kernels: launch overhead) and other (the "
                "work waited on something else, e.g. an event or a collective). Per-stream "
                "gaps in the evidence overlap other streams' work and are not added up."
            ),
            suggestion={
                "host_wait": "Feed the device faster: bigger batches, fewer and larger ops"
                + (" (torch.compile)" if not compiled else "")
                + ", "
                + ("CUDA graphs, " if graphs else "")
                + "no syncs in the loop, faster data loading.",
                "kernel_wait": "Many tiny back-to-back kernels: fuse them"
                + (" (torch.compile)" if not compiled else " (larger compiled regions)")
                + (" or capture them in a CUDA graph" if graphs else "")
                + " to remove launch gaps.",
                "other": "Look at cross-stream dependencies (event waits, collectives, copies "
                "on side streams) in Perfetto around the longest gaps.",
            }[dominant],
            impact_us=0.0,
            evidence=evidence,
            measured={
                "idle_share": round(share, 4),
                "busy_share": round(1 - share, 4),
                "min_idle_share": min_share,
                **{f"{c}_share": round(total.share(c), 4) for c in CATEGORIES},
                **{f"{c}_us": round(getattr(total, c), 1) for c in CATEGORIES},
                "window_us": round(span, 1),
                "kernel_gap_us": gap,
            },
        )
    ]


def _split_text(split: IdleSplit) -> str:
    return ", ".join(f"{_CATEGORY_WORDS[c]} {split.share(c):.0%}" for c in CATEGORIES)


def _device_evidence(trace, dev: DeviceIdle, n_devices: int) -> Evidence:
    """The union account of one device: busy, idle by cause, its longest idle gap."""
    span = dev.window.busy + dev.window.idle
    start, dur, cat = dev.longest_gap or (None, 0.0, "")
    name = f"device {dev.device}" if n_devices > 1 and dev.device is not None else "device"
    return Evidence(
        f"{name}: busy {fmt_us(dev.window.busy)} ({dev.window.busy / span:.0%}), idle "
        f"{fmt_us(dev.window.idle)} ({dev.window.idle / span:.0%}: {_split_text(dev.window)}) "
        f"of {fmt_us(span)}; longest idle gap {fmt_us(dur)} ({_CATEGORY_WORDS.get(cat, cat)})",
        name=name,
        ts_us=trace.rel(start) if start is not None else None,
        dur_us=dur or None,
        value=dev.window.idle,
        unit="us",
    )


def _stream_evidence(trace, streams: list[StreamIdle]) -> list[Evidence]:
    """Per stream, the gaps between its own events (HTA's view): where the idle sits."""
    out = []
    for st in sorted(streams, key=lambda st: -st.total.idle)[:4] if len(streams) > 1 else []:
        if st.total.idle <= 0:
            continue
        start, dur, cat = st.longest_gap or (None, None, "")
        out.append(
            Evidence(
                f"stream alone: {fmt_us(st.total.idle)} between its own events "
                f"({_split_text(st.total)}), other streams may run then; longest gap "
                f"{fmt_us(dur or 0)} ({_CATEGORY_WORDS.get(cat, cat)})",
                name=st.label,
                ts_us=trace.rel(start) if start is not None else None,
                dur_us=dur,
                value=st.total.idle,
                unit="us",
            )
        )
    return out


@rule(
    "profiling-window",
    FAMILY,
    "the profiled window is too narrow (one step, no warmup) or too broad",
    min_steps=2,
    max_steps=20,
    max_events=2_000_000,
)
def profiling_window(ctx) -> list[Finding]:
    trace = ctx.trace
    steps = trace.steps
    min_steps, max_steps = int(ctx.threshold("min_steps")), int(ctx.threshold("max_steps"))
    max_events = int(ctx.threshold("max_events"))
    problems: list[str] = []
    evidence: list[Evidence] = []
    if not steps:
        problems.append("no ProfilerStep#N ranges: per-step numbers cannot be computed")
    elif len(steps) < min_steps:
        problems.append(f"only {len(steps)} step recorded (fewer than {min_steps})")
    if steps and steps[0].number == 0:
        problems.append("the first recorded step is #0: no wait/warmup steps before recording")
        evidence.append(
            Evidence(
                "first recorded step is ProfilerStep#0",
                name="ProfilerStep#0",
                ts_us=trace.rel(steps[0].start),
                dur_us=steps[0].dur,
                step=0,
            )
        )
    too_broad = len(steps) > max_steps or len(trace) > max_events
    if len(steps) > max_steps:
        problems.append(f"{len(steps)} active steps (more than {max_steps})")
    if len(trace) > max_events:
        problems.append(f"{len(trace):,} events (more than {max_events:,})")
    if not problems:
        return []
    if steps:
        evidence.append(
            Evidence(
                f"steps #{steps[0].number}..#{steps[-1].number}: "
                f"{fmt_us(sum(s.dur for s in steps))} of steps in a "
                f"{fmt_us(trace.end_time - trace.start_time)} recording, {len(trace):,} events",
                value=len(steps),
                unit="steps",
            )
        )
    advice = (
        "Profile a few representative steps after warm-up: "
        "torch.profiler.profile(schedule=torch.profiler.schedule(wait=1, warmup=1, active=3, "
        "repeat=1)) and call prof.step() at the end of every iteration."
    )
    if too_broad:
        advice += " A smaller window loads faster and keeps the profiler's own overhead low."
    return [
        Finding(
            id="profiling-window",
            severity="info",
            title="Profiling window: " + "; ".join(problems),
            explanation=(
                "What the profiler records decides what can be read from it. Without step "
                "markers nothing can be compared step to step; without warm-up the first step "
                "carries one-time costs (allocations, "
                + ("cuBLAS heuristics" if trace.has_device else "BLAS and oneDNN kernel choices")
                + ", lazy loading); a huge window is slow to load and hides the typical step."
            ),
            suggestion=advice,
            impact_us=0.0,
            evidence=evidence,
            measured={
                "steps": len(steps),
                "events": len(trace),
                "min_steps": min_steps,
                "max_steps": max_steps,
                "max_events": max_events,
            },
        )
    ]
