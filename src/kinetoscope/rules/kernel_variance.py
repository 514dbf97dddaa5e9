"""`kernel-variance`: the same device work takes different time from step to step.

Only work that is provably the same is compared (analysis/kernel_variance.py:
same kernel, grid, block, calling op and position in the step), only across
steps, and only a spread that matters is reported: the slowest run is both
`max_over_median` times the median and costs at least `min_step_share` of a
step. Each slow run says what the trace shows beside it (first run, a
collective on another stream, a whole step running slower).
"""

from __future__ import annotations

import numpy as np

from ..analysis.compile import compile_events
from ..analysis.kernel_names import decoded
from ..analysis.kernel_variance import (
    SameWork,
    collective_overlap,
    outside_compilation,
    same_work_groups,
    step_slowdown,
)
from ..formatting.units import count, fmt_us
from .base import Evidence, Finding, NotChecked, rule
from .requires import need_kernels

#: a step whose repeated work runs this much slower than usual as a whole points to the device
_SLOW_STEP = 1.2
#: a collective covering this share of the slow run is named as the likely cause
_OVERLAP = 0.5


def _cause(trace, group: SameWork, slow: int, slowdown: dict[int, float]) -> tuple[str, str]:
    """(cause id, what the trace shows) for the slowest run `slow` (a position in `group`)."""
    index = int(group.indices[slow])
    overlap = collective_overlap(trace, index)
    if overlap >= _OVERLAP:
        return "collective-overlap", (
            f"a collective kernel ran on another stream for {overlap:.0%} of it (they share "
            "SMs and memory bandwidth)"
        )
    step = int(group.steps[slow])
    if slowdown.get(step, 1.0) >= _SLOW_STEP:
        return "slow-step", (
            f"all repeated work of step #{step} ran {slowdown[step]:.2f}x its usual time "
            "(clocks, power or another tenant of the device)"
        )
    if slow == 0:
        return "first-run", "it is the first run in the window (cold caches, lazy loading)"
    return "unexplained", "nothing else in the trace explains it"


def _runs(trace, group: SameWork) -> str:
    d = group.durations(trace)
    if len(d) <= 12:
        return ", ".join(
            f"#{int(st)} {v:.1f}" for st, v in zip(group.steps.tolist(), d.tolist(), strict=True)
        )
    p10, p50, p90 = np.percentile(d, [10, 50, 90])
    return f"p10 {p10:.1f}, p50 {p50:.1f}, p90 {p90:.1f}, max {d.max():.1f}"


def _label(trace, group: SameWork) -> str:
    grid = f" grid {list(group.grid)}" if group.grid else ""
    caller = f" from {group.caller}" if group.caller else ""
    nth = f" (launch {group.position + 1} of the step)" if group.position else ""
    return f"{decoded(trace, trace.names[group.name_id]).short}{grid}{caller}{nth}"


@rule(
    "kernel-variance",
    "gpu-lane",
    "the same work (kernel, grid, block, calling op, position) takes different time across steps",
    max_over_median=1.5,
    min_step_share=0.01,
    min_occurrences=3,
)
def kernel_variance(ctx) -> list[Finding]:
    trace = ctx.trace
    need_kernels(trace)
    need = int(ctx.threshold("min_occurrences"))
    if len(trace.steps) < need:
        raise NotChecked(
            f"needs at least {need} profiled steps to compare the same work across steps, "
            f"the trace has {len(trace.steps)}",
            "profile more active steps (schedule active=3 or more)",
        )
    ratio_t, share_t = ctx.threshold("max_over_median"), ctx.threshold("min_step_share")
    step_us = float(np.median([s.dur for s in trace.steps]))
    # a run launched (or running) while Dynamo/Inductor compile is compilation's work
    # (autotuning benchmarks, first runs of new code), not a steady-state spread
    groups = outside_compilation(trace, same_work_groups(trace, need), ctx.analysis(compile_events))
    groups = [g for g in groups if len(g.indices) >= need]
    hits = []
    for g in groups:
        d = g.durations(trace)
        median = float(np.median(d))
        slow = int(np.argmax(d))
        excess = float(d[slow]) - median
        if median <= 0 or d[slow] < ratio_t * median or excess < share_t * step_us:
            continue
        hits.append((float(np.clip(d - median, 0, None).sum()), g, median, slow))
    if not hits:
        return []
    slowdown = step_slowdown(trace, groups)
    hits.sort(key=lambda h: -h[0])
    causes = []
    evidence = []
    for k, (_excess, g, median, slow) in enumerate(hits):
        cause, why = _cause(trace, g, slow, slowdown)
        causes.append(cause)
        if k >= 5:
            continue
        d = g.durations(trace)
        index = int(g.indices[slow])
        evidence.append(
            Evidence(
                f"{_label(trace, g)}: median {fmt_us(median, 1)}, slowest {fmt_us(d[slow], 1)} "
                f"in step #{int(g.steps[slow])} ({d[slow] / median:.2f}x, threshold "
                f"{ratio_t:g}x; {(d[slow] - median) / step_us:.1%} of a step, threshold "
                f"{share_t:.0%}); {why}. Runs (us): {_runs(trace, g)}",
                name=trace.names[g.name_id],
                ts_us=trace.rel(trace.ts[index]),
                dur_us=float(trace.dur[index]),
                step=int(g.steps[slow]),
                value=float(d[slow] / median),
            )
        )
    top = hits[0]
    worst = float(top[1].durations(trace)[top[3]] / top[2])
    only_cold = all(c == "first-run" for c in causes)
    tally = {c: causes.count(c) for c in dict.fromkeys(causes)}
    return [
        Finding(
            id="kernel-variance",
            severity="info" if only_cold else "warn",
            title=(
                f"{count(len(hits), 'repeated kernel')} slower in some steps "
                f"(worst {worst:.2f}x its median)"
            ),
            explanation=(
                "The same kernel, with the same grid and block, launched by the same op at the "
                "same point of the step, does the same work every step, yet some runs took "
                "much longer. What the trace shows beside the slow runs: "
                + ", ".join(f"{_CAUSE_WORDS[c]} ({n})" for c, n in tally.items())
                + "."
            ),
            suggestion=" ".join(dict.fromkeys(_CAUSE_ADVICE[c] for c in causes)),
            impact_us=sum(h[0] for h in hits) / len(trace.steps),
            evidence=evidence,
            measured={
                "kernels": len(hits),
                "worst_max_over_median": round(worst, 3),
                "causes": tally,
                "threshold_max_over_median": ratio_t,
                "threshold_min_step_share": share_t,
                "threshold_min_occurrences": need,
            },
        )
    ]


_CAUSE_WORDS = {
    "collective-overlap": "a collective running on another stream",
    "slow-step": "the whole step ran slower",
    "first-run": "the first run in the window",
    "unexplained": "nothing else in the trace",
}
_CAUSE_ADVICE = {
    "collective-overlap": (
        "Overlapping communication with compute is intended; if the slowed kernel is on the "
        "critical path, reorder or bucket the collectives so they overlap work that is not."
    ),
    "slow-step": (
        "Lock clocks when benchmarking (nvidia-smi -lgc / rocm-smi --setperfdeterminism) and "
        "check what else runs on the device."
    ),
    "first-run": (
        "A first run paying one-time costs is not a steady cost: profile after warmup steps."
    ),
    "unexplained": (
        "Read the distribution, not the mean: profile more steps and check what else shares "
        "the device (other processes, MPS, MIG neighbours)."
    ),
}
