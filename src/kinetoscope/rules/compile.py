"""torch.compile rules (docs/rules.md, "torch.compile"): did compiled code run, and
did the graph break. Event names in analysis/compile.py; recompiles and guard cost in
`compile_guards`, the wrapper's CPU tax and compilation in the window in `compile_cost`.
"""

from __future__ import annotations

from collections import Counter

from ..analysis.compile import (
    compiling_steps,
    eager_between,
)
from ..analysis.dispatch import instances
from ..analysis.stepmap import (
    step_of,
)
from ..formatting.units import count, fmt_us
from .base import Evidence, Finding, event_evidence, rule
from .compile_regions import calls_by_step, compiled_regions, step_prefix


@rule("compiled-region", "torch-compile", "Torch-Compiled Region rows: compiled code ran")
def compiled_region(ctx) -> list[Finding]:
    trace = ctx.trace
    calls = compiled_regions(ctx)
    # AOTAutograd's autograd.Function: the compiled forward (inside the region; the only
    # marker in torch 2.0 traces) and the compiled backward, which autograd runs later
    forward = instances(trace, ["CompiledFunction"])
    backward = instances(trace, ["CompiledFunctionBackward"])
    if not calls:
        if not len(forward) and not len(backward):
            return []
        return [_compiled_function_only(trace, forward, backward)]
    per_step = calls_by_step(calls)
    labels = Counter(c.label or "(unnumbered)" for c in calls)
    evidence = []
    for step, members in list(per_step.items())[:6]:
        distinct = sorted({c.label or "(unnumbered)" for c in members})
        cpu = sum(c.dur - c.nested_us + c.lookup_us for c in members)  # nested counted once
        evidence.append(
            Evidence(
                f"{step_prefix(step)}{count(len(members), 'region call')} of "
                f"{', '.join(distinct)}, "
                f"{fmt_us(cpu, 1)} CPU including guard checks",
                name=trace.name(members[0].index),
                ts_us=trace.rel(members[0].ts),
                dur_us=members[0].dur,
                step=step,
                value=float(len(members)),
                unit="calls",
            )
        )
    for c in calls[:1]:
        if c.graph_hash:
            evidence.append(
                event_evidence(
                    trace,
                    c.graph_call,
                    f"region {c.label} runs Inductor graph {c.graph_hash}",
                    step=c.step,
                )
            )
    if len(backward):
        first = int(backward[0])
        evidence.append(
            Evidence(
                f"{len(backward)} CompiledFunctionBackward call(s): the compiled backward graph, "
                f"{fmt_us(float(trace.dur[backward].sum()), 1)} CPU",
                name="CompiledFunctionBackward",
                ts_us=trace.rel(trace.ts[first]),
                dur_us=float(trace.dur[first]),
                step=step_of(trace, trace.ts[first]),
                value=float(len(backward)),
                unit="calls",
            )
        )
    most = max(len(m) for m in per_step.values())
    distinct_max = max(len({c.frame for c in m}) for m in per_step.values())
    return [
        Finding(
            id="compiled-region",
            severity="info",
            title=(
                f"{count(len(calls), 'torch.compile region call')}, "
                f"{count(len(labels), 'distinct region')} "
                f"({', '.join(labels)})"
            ),
            explanation=(
                "'Torch-Compiled Region: K/M' marks code compiled by torch.compile running: K is "
                "the Python frame Dynamo compiled, M which compilation of it. Inside, "
                "'## Call CompiledFxGraph ##' is the Inductor graph and its kernels."
                + (
                    " Several compiled frames in one step usually mean graph breaks."
                    if distinct_max > 1
                    else (
                        f" At most {count(most, 'call')} of one region per step: no sign of "
                        "graph breaks."
                    )
                )
            ),
            suggestion=(
                "Check graph-break, recompile and dynamo-guard-cost below; "
                "torch._dynamo.explain(fn)(*args) lists the breaks and their reasons."
            ),
            impact_us=0.0,
            evidence=evidence,
            measured={"calls": len(calls), "distinct_regions": len(labels), "max_per_step": most},
        )
    ]


def _compiled_function_only(trace, forward, backward) -> Finding:
    """Older traces (torch 2.0) mark compiled code only with AOTAutograd's CompiledFunction."""
    evidence = []
    for name, idx in (("CompiledFunction", forward), ("CompiledFunctionBackward", backward)):
        if len(idx):
            first = int(idx[0])
            evidence.append(
                Evidence(
                    f"{count(len(idx), name + ' call')}, "
                    f"{fmt_us(float(trace.dur[idx].sum()), 1)} CPU",
                    name=name,
                    ts_us=trace.rel(trace.ts[first]),
                    dur_us=float(trace.dur[first]),
                    step=step_of(trace, trace.ts[first]),
                    value=float(len(idx)),
                    unit="calls",
                )
            )
    return Finding(
        id="compiled-region",
        severity="info",
        title=f"compiled code ran: {len(forward)} CompiledFunction, "
        f"{len(backward)} CompiledFunctionBackward call(s)",
        explanation=(
            "CompiledFunction is the autograd.Function AOTAutograd wraps around a graph compiled "
            "by torch.compile (CompiledFunctionBackward its backward). This trace has no "
            "'Torch-Compiled Region' rows (recorded with torch 2.0, or outside Dynamo), so regions "
            "and graph breaks cannot be told apart."
        ),
        suggestion="Record with a recent torch to see the regions, guard checks and graph hashes.",
        impact_us=0.0,
        evidence=evidence,
        measured={"forward_calls": int(len(forward)), "backward_calls": int(len(backward))},
    )


@rule(
    "graph-break",
    "torch-compile",
    "several distinct compiled regions in one step: the graph broke",
    regions=2,
)
def graph_break(ctx) -> list[Finding]:
    trace = ctx.trace
    calls = compiled_regions(ctx)
    if not calls:
        return []
    need = int(ctx.threshold("regions"))
    hits = []
    compiling = compiling_steps(trace)  # a compiling step's regions are compilation's evidence
    for step, members in calls_by_step(calls).items():
        if step in compiling:
            continue
        # a graph break makes a new frame K; a new M of the same frame is a recompile
        frames = list(dict.fromkeys((c.frame, c.label) for c in members if c.frame is not None))
        frames = list({f: (f, lbl) for f, lbl in frames}.values())
        if len(frames) >= need:
            hits.append((step, members, frames))
    if not hits:
        return []
    # the frame resumed after a break is called from the broken frame's code, so its region
    # runs inside the caller's; separately compiled functions run one after the other
    resumed = sum(
        1
        for _, members, _ in hits
        for a, b in zip(members, members[1:], strict=False)
        if a.frame != b.frame and b.ts < a.end
    )
    extra_us = sum(
        c.wrapper_us for _, members, _ in hits for c in members if c.frame != members[0].frame
    )
    evidence = []
    for step, members, frames in hits[:3]:
        evidence.append(
            Evidence(
                f"{step_prefix(step)}{len(frames)} distinct regions "
                f"({', '.join(lbl or '(unnumbered)' for _, lbl in frames)}), {len(members)} calls",
                name=trace.name(members[0].index),
                ts_us=trace.rel(members[0].ts),
                step=step,
                value=float(len(frames)),
                unit="regions",
            )
        )
        for a, b in zip(members, members[1:], strict=False):
            if a.frame == b.frame:
                continue
            lo, eager = eager_between(trace, a, b)
            names = Counter(trace.name(i) for i in eager)
            what = ", ".join(f"{n} x{c}" for n, c in names.most_common(4)) or "no op recorded"
            inside = " (resumed inside it)" if b.ts < a.end else ""
            evidence.append(
                Evidence(
                    f"break between {a.label} and {b.label}{inside}: eager code ran in between "
                    f"for {fmt_us(max(b.ts - lo, 0.0), 1)} ({what})",
                    name=trace.name(b.index),
                    ts_us=trace.rel(lo),
                    dur_us=max(b.ts - lo, 0.0),
                    step=step,
                )
            )
    most = max(len(h[2]) for h in hits)
    if resumed:
        title = f"graph breaks: up to {most} compiled regions per step"
        explanation = (
            "torch.compile could not capture the function as one graph: where it hit something "
            "it cannot trace (print, .item(), data-dependent control flow, an unsupported call) "
            "it split the code, ran that part eagerly and compiled the rest as separate regions "
            "(here the next region runs inside the previous one: Dynamo resumed the frame after "
            "the break). Each break adds a guard check and wrapper overhead and stops fusion "
            "across it."
        )
    else:
        title = f"{most} compiled frames per step: graph breaks or separately compiled functions"
        explanation = (
            "Several compiled frames run one after the other in each step. Either torch.compile "
            "split a function at graph breaks, or several functions/modules were compiled "
            "separately. Each region pays its own guard check and wrapper, and nothing is fused "
            "across region boundaries."
        )
    return [
        Finding(
            id="graph-break",
            severity="warn" if resumed else "info",
            title=title,
            explanation=explanation,
            suggestion=(
                "Find the reasons with torch._dynamo.explain(fn)(*args) or "
                "TORCH_LOGS=graph_breaks and remove them (fullgraph=True turns a break into an "
                "error); compile one larger function instead of several small ones."
            ),
            impact_us=extra_us / len(hits),
            evidence=evidence,
            measured={
                "max_regions_per_step": most,
                "resumed_inside": resumed,
                "threshold_regions": need,
            },
        )
    ]
