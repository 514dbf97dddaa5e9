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
from ..analysis.idle import CATEGORIES, IdleSplit, idle_breakdown
from ..analysis.stats import OUTLIER_FACTOR, OUTLIER_MIN_STEPS, step_outliers
from ..analysis.stepmap import step_count
from ..analysis.steps import step_stats
from ..analysis.syncs import sync_sites
from ..units import count, fmt_us
from .advice import cuda_graphs_fit
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
    # steps, and a slow first step counts too (cold-start explains its one-time costs)
    med = median(s.dur for s in stats)
    ratio = ctx.threshold("ratio")
    # a step that compiled is slow because torch.compile ran: compilation-in-window's evidence
    flagged = {number for number, _ in step_outliers(stats, ratio)} - compiling_steps(trace)
    slow = [s for s in stats if s.number in flagged]
    if not slow:
        return []
    parts = _step_parts(ctx)
    typical = {k: median(parts[s.number][k] for s in stats) for k in _PART_NAMES}
    evidence = []
    for s in sorted(slow, key=lambda s: -s.dur):
        diffs = {k: parts[s.number][k] - typical[k] for k in _PART_NAMES}
        cause = max(diffs, key=lambda k: diffs[k])
        what = (
            f"{_PART_NAMES[cause]} +{fmt_us(diffs[cause])} vs the median step"
            if diffs[cause] > 0.25 * (s.dur - med)
            else "no single cause stands out (host and device both slower)"
        )
        if s is stats[0]:
            what += " (the first profiled step: one-time costs, see cold-start)"
        evidence.append(
            Evidence(
                f"{fmt_us(s.dur)} = {s.dur / med:.2f}x the median {fmt_us(med)}; {what}",
                name=f"ProfilerStep#{s.number}",
                ts_us=trace.rel(s.start),
                dur_us=s.dur,
                step=s.number,
                value=s.dur / med,
                unit="x median",
            )
        )
    worst = max(s.dur for s in slow)
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
            impact_us=sum(s.dur - med for s in slow) / len(stats),
            evidence=evidence,
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
    "device idle time split into host wait, kernel-to-kernel gaps and other (HTA's split)",
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
    streams = idle_breakdown(trace, gap)
    in_steps = IdleSplit()
    per_stream = []
    for st in streams:
        split = IdleSplit()
        for number, part in st.by_step.items():
            if number is not None or not trace.steps:
                split.add(part)
        in_steps.add(split)
        per_stream.append((st, split))
    span = in_steps.busy + in_steps.idle
    share = in_steps.idle / span if span > 0 else 0.0
    min_share = ctx.threshold("min_idle_share")
    if share < min_share:
        return []
    dominant = in_steps.dominant
    n_steps = step_count(trace)
    evidence = []
    for st, split in sorted(per_stream, key=lambda p: -p[1].idle)[:4]:
        if split.idle <= 0:
            continue
        text = ", ".join(f"{_CATEGORY_WORDS[c]} {split.share(c):.0%}" for c in CATEGORIES)
        start, dur, cat = st.longest_gap or (None, None, "")
        evidence.append(
            Evidence(
                f"idle {fmt_us(split.idle)} between its events ({text}); "
                f"longest gap {fmt_us(dur or 0)} ({_CATEGORY_WORDS.get(cat, cat)})",
                name=st.label,
                ts_us=trace.rel(start) if start is not None else None,
                dur_us=dur,
                value=split.idle,
                unit="us",
            )
        )
    main = max(per_stream, key=lambda p: p[1].busy)[1]
    # a breakdown, not a cause: it ranks by the host-wait time on the busiest stream only
    # when that dominates and the streams idle most of the time (else causes rank first)
    severity = "warn" if dominant == "host_wait" and share >= 0.5 else "info"
    impact = main.host_wait / n_steps if severity == "warn" else 0.0
    by_step = _idle_by_step(streams)
    for number, split in sorted(by_step.items(), key=lambda kv: -kv[1].idle)[:5]:
        text = ", ".join(f"{_CATEGORY_WORDS[c]} {split.share(c):.0%}" for c in CATEGORIES)
        step = next(s for s in trace.steps if s.number == number)
        evidence.append(
            Evidence(
                f"streams idle {fmt_us(split.idle)} in the step ({text})",
                name=f"ProfilerStep#{number}",
                ts_us=trace.rel(step.start),
                dur_us=step.dur,
                step=number,
                value=split.idle,
                unit="us",
            )
        )
    return [
        Finding(
            id="gpu-idle-breakdown",
            severity=severity,
            title=(
                f"Device streams idle {share:.0%} of the time between their events; "
                f"mostly {dominant.replace('_', ' ')} ({in_steps.share(dominant):.0%})"
            ),
            explanation=(
                "Idle time on each stream is split the way HolisticTraceAnalysis does: host "
                "wait (the host enqueued the next kernel only after the stream ran dry: the "
                f"host is too slow), kernel wait (gaps under {gap:g} us between back-to-back "
                "kernels: launch overhead) and other (the stream waited on something else, "
                "e.g. an event from another stream or a collective)."
            ),
            suggestion={
                "host_wait": "Feed the device faster: bigger batches, fewer and larger ops "
                "(torch.compile), "
                + ("CUDA graphs, " if graphs else "")
                + "no syncs in the loop, faster data loading.",
                "kernel_wait": "Many tiny back-to-back kernels: fuse them (torch.compile)"
                + (" or capture them in a CUDA graph" if graphs else "")
                + " to remove launch gaps.",
                "other": "Look at cross-stream dependencies (event waits, collectives, copies "
                "on side streams) in Perfetto around the longest gaps.",
            }[dominant],
            impact_us=impact,
            evidence=evidence,
            measured={
                "idle_share": round(share, 4),
                "min_idle_share": min_share,
                **{f"{c}_share": round(in_steps.share(c), 4) for c in CATEGORIES},
                **{f"{c}_us": round(getattr(in_steps, c), 1) for c in CATEGORIES},
                "kernel_gap_us": gap,
            },
        )
    ]


def _idle_by_step(streams) -> dict[int, IdleSplit]:
    """Idle split per ProfilerStep, summed over streams."""
    per_step: dict[int, IdleSplit] = defaultdict(IdleSplit)
    for st in streams:
        for number, part in st.by_step.items():
            if number is not None:
                per_step[number].add(part)
    return dict(per_step)


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
                "carries one-time costs (allocations, cuBLAS heuristics, lazy loading); a huge "
                "window is slow to load and hides the typical step."
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
