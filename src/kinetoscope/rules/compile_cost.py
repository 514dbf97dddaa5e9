"""torch.compile rules on what compiling costs (docs/rules.md, "torch.compile"): the
compiled wrapper's CPU next to the ops it runs (`compile-cpu-tax`) and compilation
recorded inside the profiled window (`compilation-in-window`).
"""

from __future__ import annotations

import numpy as np

from ..analysis.cold_start import (
    FIRST_RUN_EXCESS_US,
    FIRST_RUN_FACTOR,
    cold_first_later_median,
)
from ..analysis.compile import (
    compile_events,
    compile_id_of,
    compiling_steps,
)
from ..analysis.dispatch import op_work
from ..analysis.stepmap import (
    mean_step_us,
    step_count,
    step_numbers,
    step_or_none,
)
from ..formatting.units import count, fmt_us
from .advice import cuda_graphs_fit
from .base import Evidence, Finding, event_evidence, rule
from .compile_regions import compiled_regions


@rule(
    "compile-cpu-tax",
    "torch-compile",
    "the compiled wrapper stack costs more CPU than the ops it runs",
    ratio=1.0,
)
def compile_cpu_tax(ctx) -> list[Finding]:
    trace = ctx.trace
    compiling = compiling_steps(trace)
    ran = [
        c
        for c in compiled_regions(ctx)
        if (c.graph_call >= 0 or c.ops_us > 0) and c.step not in compiling
    ]
    cold = _cold_first_calls(ran)
    left_out = {c.index for c, _ in cold}
    calls = [c for c in ran if c.index not in left_out]
    if not calls:
        return []
    wrapper = sum(c.wrapper_us for c in calls)
    ops = sum(c.ops_us for c in calls)
    ratio = wrapper / ops if ops > 0 else float("inf")
    if ratio <= ctx.threshold("ratio"):
        return []
    host = sum(c.host_us for c in calls)
    device = 0.0
    if trace.has_device:
        work = op_work(trace, np.array([c.index for c in calls], dtype=np.int64))
        device = float(sum(work.device_us[c.index] for c in calls))
    hidden = device >= host
    n_steps = len({c.step for c in calls})
    impact = 0.0 if hidden else max(wrapper - ops, 0.0) / max(n_steps, 1)
    c0 = max(calls, key=lambda c: c.wrapper_us)
    evidence = [
        Evidence(
            f"{count(len(calls), 'region call')}: wrapper {fmt_us(wrapper, 1)} vs ops "
            f"{fmt_us(ops, 1)} "
            "CPU "
            f"(ratio {ratio:.2f}, threshold {ctx.threshold('ratio'):.2f})",
            value=ratio,
        ),
        event_evidence(
            trace,
            c0.index,
            f"largest: region {c0.label}, guard check {fmt_us(c0.lookup_us, 1)} + "
            f"region {fmt_us(c0.dur, 1)} "
            f"of which the graph's ops take {fmt_us(c0.ops_us, 1)}",
            step=c0.step,
            value=c0.wrapper_us,
            unit="us",
        ),
    ]
    if cold:
        evidence.append(_cold_evidence(trace, cold))
    if trace.has_device:
        evidence.append(
            Evidence(
                f"device time launched from the regions: {fmt_us(device, 1)} "
                f"vs {fmt_us(host, 1)} of host time",
                value=device,
                unit="us",
            )
        )
    return [
        Finding(
            id="compile-cpu-tax",
            severity="info" if hidden else "warn",
            title=(
                f"the torch.compile wrapper costs {ratio:.1f}x the CPU time of the ops it runs"
                if np.isfinite(ratio)
                else (
                    f"the torch.compile wrapper costs {fmt_us(wrapper, 1)} CPU around no "
                    "measured ops"
                )
            ),
            explanation=(
                "A compiled region runs a stack of wrappers (guard check, Dynamo's bytecode, "
                "AOTAutograd's prologue, Inductor's Python wrapper) around the kernels it "
                "launches. "
                "For small graphs this stack costs more CPU than the work itself, so the compiled "
                "code can be slower per step than eager."
                + (
                    " Here the device work is longer than the host side, so the tax is hidden."
                    if hidden
                    else ""
                )
            ),
            suggestion=(
                "Compile amortizes over many ops: compile a larger region"
                + (
                    "; try mode='reduce-overhead' (CUDA graphs replay the launches with one call)."
                    if cuda_graphs_fit(ctx)
                    else "."
                )
            ),
            impact_us=impact,
            evidence=evidence,
            measured={
                "wrapper_us": round(wrapper, 3),
                "ops_us": round(ops, 3),
                "ratio": round(ratio, 3) if np.isfinite(ratio) else None,
                "threshold_ratio": ctx.threshold("ratio"),
                "device_us": round(device, 3),
            },
        )
    ]


def _cold_first_calls(calls) -> list[tuple]:
    """The first call of each region (by label and graph) that is a cold first run next to
    its later calls (three calls at least), each with the median host time of the later
    ones. Its inflated ops (a first call loads and warms what the later ones reuse) would
    stand in for the steady tax the rule judges."""
    by_region: dict[tuple, list] = {}
    for c in calls:
        by_region.setdefault((c.label, c.graph_hash), []).append(c)
    cold = []
    for group in by_region.values():
        if len(group) >= 3:
            later = cold_first_later_median(np.array([c.host_us for c in group]))
            if later is not None:
                cold.append((group[0], later))
    return cold


def _cold_evidence(trace, cold: list[tuple]) -> Evidence:
    first, later = max(cold, key=lambda pair: pair[0].host_us)
    return event_evidence(
        trace,
        first.index,
        f"left out {count(len(cold), 'cold first call')}: the first call of region "
        f"{first.label or 'unnumbered'} took {fmt_us(first.host_us, 1)} against a median "
        f"of {fmt_us(later, 1)} for its later calls (>= {FIRST_RUN_FACTOR:g}x and >= "
        f"{FIRST_RUN_EXCESS_US:g} us more: one-time work, not the steady tax)",
        step=first.step,
        value=first.host_us,
        unit="us",
    )


@rule(
    "compilation-in-window",
    "torch-compile",
    "Dynamo/Inductor compilation work inside the profiled window",
)
def compilation_in_window(ctx) -> list[Finding]:
    trace = ctx.trace
    events = ctx.analysis(compile_events)
    if not len(events):
        return []
    total = float(trace.dur[events].sum())
    steps = step_numbers(trace, trace.ts[events])
    evidence = []
    for k, i in enumerate(events[:6].tolist()):
        cid = compile_id_of(trace, i)
        evidence.append(
            event_evidence(
                trace,
                i,
                f"{trace.name(i)}{f' (compile_id {cid})' if cid else ''}: "
                f"{fmt_us(trace.dur[i], 1)}",
                step=step_or_none(int(steps[k])),
                value=float(trace.dur[i]),
                unit="us",
            )
        )
    span = trace.end_time - trace.start_time
    return [
        Finding(
            id="compilation-in-window",
            # the window's numbers describe compilation: read this before any other finding
            severity="critical",
            title=f"torch.compile compiled inside the profiled window ({fmt_us(total, 1)}, "
            f"{total / span:.0%} of the trace)",
            explanation=(
                "The first call of a compiled function (and every recompile) traces it with "
                "Dynamo and generates code with Inductor, which takes seconds. It happened while "
                "the profiler was recording, so the step times and the host/device balance in "
                "this trace describe compilation, not your steady state."
            ),
            suggestion=(
                "Warm up before profiling: call the compiled function a few times with "
                "representative inputs first, or use schedule(wait=1, warmup=2, active=3)."
            ),
            impact_us=min(total / step_count(trace), mean_step_us(trace)),
            evidence=evidence,
            measured={
                "compile_us": round(total, 3),
                "compile_events": int(len(events)),
                "share_of_trace": round(total / span, 4),
            },
        )
    ]
