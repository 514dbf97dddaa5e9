"""torch.compile rules (docs/rules.md, "torch.compile"); event names in analysis/compile.py."""

from __future__ import annotations

from collections import Counter, defaultdict

import numpy as np

from ..analysis.compile import (
    cache_lookups,
    compile_events,
    compile_id_of,
    compiling_steps,
    eager_between,
    region_calls,
)
from ..analysis.dispatch import instances, op_work
from ..analysis.stepmap import (
    host_cost_by_step,
    mean_step_us,
    step_count,
    step_numbers,
    step_of,
    step_or_none,
)
from ..units import count, fmt_us
from .advice import cuda_graphs_fit
from .base import Evidence, Finding, rule
from .impact import host_cost_hidden


def _regions(ctx):
    return ctx.analysis(region_calls)


def _by_step(calls) -> dict[int | None, list]:
    out: dict[int | None, list] = defaultdict(list)
    for c in calls:
        out[c.step].append(c)
    return out


def _step_prefix(step: int | None) -> str:
    """`step #3: ` to open an evidence line, nothing in a trace without steps."""
    return f"step #{step}: " if step is not None else ""


@rule("compiled-region", "torch-compile", "Torch-Compiled Region rows: compiled code ran")
def compiled_region(ctx) -> list[Finding]:
    trace = ctx.trace
    calls = _regions(ctx)
    # AOTAutograd's autograd.Function: the compiled forward (inside the region; the only
    # marker in torch 2.0 traces) and the compiled backward, which autograd runs later
    forward = instances(trace, ["CompiledFunction"])
    backward = instances(trace, ["CompiledFunctionBackward"])
    if not calls:
        if not len(forward) and not len(backward):
            return []
        return [_compiled_function_only(trace, forward, backward)]
    per_step = _by_step(calls)
    labels = Counter(c.label or "(unnumbered)" for c in calls)
    evidence = []
    for step, members in list(per_step.items())[:6]:
        distinct = sorted({c.label or "(unnumbered)" for c in members})
        cpu = sum(c.dur - c.nested_us + c.lookup_us for c in members)  # nested counted once
        evidence.append(
            Evidence(
                f"{_step_prefix(step)}{count(len(members), 'region call')} of "
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
                Evidence(
                    f"region {c.label} runs Inductor graph {c.graph_hash}",
                    name=trace.name(c.graph_call),
                    ts_us=trace.rel(trace.ts[c.graph_call]),
                    dur_us=float(trace.dur[c.graph_call]),
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
    calls = _regions(ctx)
    if not calls:
        return []
    need = int(ctx.threshold("regions"))
    hits = []
    compiling = compiling_steps(trace)  # a compiling step's regions are compilation's evidence
    for step, members in _by_step(calls).items():
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
                f"{_step_prefix(step)}{len(frames)} distinct regions "
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


@rule(
    "recompile",
    "torch-compile",
    "a compiled frame was compiled again (new M index or new graph hash)",
)
def recompile(ctx) -> list[Finding]:
    trace = ctx.trace
    calls = _regions(ctx)
    if not calls:
        return []
    frames: dict[int | None, list] = defaultdict(list)
    for c in calls:
        frames[c.frame].append(c)
    changed, earlier = [], []
    for frame, members in frames.items():
        ids = list(dict.fromkeys(c.compile_id for c in members if c.compile_id is not None))
        hashes = list(dict.fromkeys(c.graph_hash for c in members if c.graph_hash))
        if len(ids) > 1 or len(hashes) > 1:
            changed.append((frame, members, ids, hashes))
        elif ids and ids[0] > 0:
            earlier.append((frame, members[0], ids[0]))
    if not changed and not earlier:
        return []
    evidence = []
    for frame, members, _ids, _hashes in changed:
        for prev, cur in zip(members, members[1:], strict=False):
            if prev.compile_id != cur.compile_id or prev.graph_hash != cur.graph_hash:
                evidence.append(
                    Evidence(
                        f"frame {frame}: region {prev.label} -> {cur.label}"
                        + (
                            f", graph {prev.graph_hash[:12]} -> {cur.graph_hash[:12]}"
                            if prev.graph_hash
                            and cur.graph_hash
                            and prev.graph_hash != cur.graph_hash
                            else ""
                        ),
                        name=trace.name(cur.index),
                        ts_us=trace.rel(cur.ts),
                        dur_us=cur.dur,
                        step=cur.step,
                        value=float(cur.compile_id or 0),
                    )
                )
    for frame, c, m in earlier:
        evidence.append(
            Evidence(
                f"frame {frame} runs compilation #{m + 1} ({c.label}): it was recompiled "
                "before the profiled window",
                name=trace.name(c.index),
                ts_us=trace.rel(c.ts),
                dur_us=c.dur,
                step=c.step,
                value=float(m),
            )
        )
    # recompiles are the compilations of an M > 0; the first compile of a frame (K/0) is not
    compiles = ctx.analysis(compile_events)
    late = [
        i for i in compiles.tolist() if (cid := compile_id_of(trace, i)) and not cid.endswith("/0")
    ]
    impact = (
        min(float(trace.dur[late].sum()) / step_count(trace), mean_step_us(trace)) if late else 0.0
    )
    return [
        Finding(
            id="recompile",
            severity="warn" if changed else "info",
            title=(
                f"{count(len(changed), 'compiled frame')} recompiled inside the window"
                if changed
                else f"{count(len(earlier), 'compiled frame')} recompiled before the window"
            ),
            explanation=(
                "Dynamo guards each compiled graph on what it assumed (shapes, dtypes, Python "
                "values). When a guard fails it compiles the frame again: the M in "
                "'Torch-Compiled Region: K/M' grows and the Inductor graph hash changes. "
                "Recompiles cost seconds each and, past cache_size_limit, fall back to eager."
            ),
            suggestion=(
                "Find the failing guard with TORCH_LOGS=recompiles; keep shapes and dtypes stable "
                "(pad/bucket inputs), mark varying dims dynamic (torch._dynamo.mark_dynamic) or "
                "compile with dynamic=True."
            ),
            impact_us=impact,
            evidence=evidence[:6],
            measured={
                "frames_recompiled_in_window": len(changed),
                "frames_recompiled_before": len(earlier),
            },
        )
    ]


@rule(
    "dynamo-guard-cost",
    "torch-compile",
    "TorchDynamo Cache Lookup + AOT prologue cost per call, as a share of the step's CPU time",
    share=0.05,
)
def dynamo_guard_cost(ctx) -> list[Finding]:
    trace = ctx.trace
    lookups = cache_lookups(trace)
    calls = _regions(ctx)
    if not len(lookups) and not calls:
        return []
    prologue: dict[int | None, float] = defaultdict(float)
    for c in calls:
        prologue[c.step] += c.prologue_us
    rows = []
    for cost in host_cost_by_step(trace, lookups):
        st, extra = cost.step, prologue[cost.step.number]
        if cost.calls or extra:
            rows.append((st, cost.calls, cost.us + extra))
    if not rows:
        return []
    # the median step: a step that compiles (seconds) must not hide the steady-state cost
    share = float(np.median([r[2] / r[0].host_busy_us for r in rows]))
    if share < ctx.threshold("share"):
        return []
    per_call = float(np.median(trace.dur[lookups])) if len(lookups) else 0.0
    per_step = float(np.median([r[2] for r in rows]))
    evidence = [
        Evidence(
            f"{len(lookups)} TorchDynamo Cache Lookup(s), median {fmt_us(per_call, 1)} each",
            name="TorchDynamo Cache Lookup",
            ts_us=trace.rel(trace.ts[lookups[0]]) if len(lookups) else None,
            dur_us=float(trace.dur[lookups[0]]) if len(lookups) else None,
            value=per_call,
            unit="us",
        )
    ]
    for st, n, guard in rows[:5]:
        evidence.append(
            Evidence(
                f"{_step_prefix(st.number)}{count(n, 'lookup')} + prologue = {fmt_us(guard, 1)}, "
                f"{guard / st.host_busy_us:.0%} of host busy time "
                f"(threshold {ctx.threshold('share'):.0%})",
                ts_us=trace.rel(st.start),
                step=st.number,
                value=guard / st.host_busy_us,
            )
        )
    # the host's time only costs the step when the device waits for it
    hidden = host_cost_hidden(r[0] for r in rows)
    return [
        Finding(
            id="dynamo-guard-cost",
            severity="info" if hidden else "warn",
            title=(
                f"Dynamo guard checks cost {fmt_us(per_step, 1)} per step ({share:.0%} of host "
                "time, median step)"
            ),
            explanation=(
                "Every call of a compiled function first runs Dynamo's guards ('TorchDynamo Cache "
                "Lookup': are shapes, dtypes and globals what the graph assumed?) and "
                "AOTAutograd's runtime prologue. This is paid on every call, even when nothing "
                "recompiles; with small graphs it is a visible share of the CPU time."
                + (
                    " Here the device is busy longer than the host, so it is hidden."
                    if hidden
                    else ""
                )
            ),
            suggestion=(
                "Compile bigger regions (the whole model or training step, not small functions "
                "called in a loop); "
                + (
                    "mode='reduce-overhead' (CUDA graphs) cuts the per-call work; "
                    if cuda_graphs_fit(ctx)
                    else ""
                )
                + "avoid guards on Python values that change."
            ),
            impact_us=0.0 if hidden else per_step,
            evidence=evidence,
            measured={
                "guard_us_per_step": round(per_step, 3),
                "share_of_host": round(share, 4),
                "lookup_us_per_call": round(per_call, 3),
                "threshold_share": ctx.threshold("share"),
            },
        )
    ]


@rule(
    "compile-cpu-tax",
    "torch-compile",
    "the compiled wrapper stack costs more CPU than the ops it runs",
    ratio=1.0,
)
def compile_cpu_tax(ctx) -> list[Finding]:
    trace = ctx.trace
    compiling = compiling_steps(trace)
    calls = [
        c for c in _regions(ctx) if (c.graph_call >= 0 or c.ops_us > 0) and c.step not in compiling
    ]
    if not calls:
        return []
    wrapper = sum(c.wrapper_us for c in calls)
    ops = sum(c.ops_us for c in calls)
    ratio = wrapper / ops if ops > 0 else float("inf")
    if ratio <= ctx.threshold("ratio"):
        return []
    host = sum(c.dur + c.lookup_us for c in calls)
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
        Evidence(
            f"largest: region {c0.label}, guard check {fmt_us(c0.lookup_us, 1)} + "
            f"region {fmt_us(c0.dur, 1)} "
            f"of which the graph's ops take {fmt_us(c0.ops_us, 1)}",
            name=trace.name(c0.index),
            ts_us=trace.rel(c0.ts),
            dur_us=c0.dur,
            step=c0.step,
            value=c0.wrapper_us,
            unit="us",
        ),
    ]
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
            Evidence(
                f"{trace.name(i)}{f' (compile_id {cid})' if cid else ''}: "
                f"{fmt_us(trace.dur[i], 1)}",
                name=trace.name(i),
                ts_us=trace.rel(trace.ts[i]),
                dur_us=float(trace.dur[i]),
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
