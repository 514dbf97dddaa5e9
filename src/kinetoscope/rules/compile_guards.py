"""torch.compile rules on Dynamo's guards (docs/rules.md, "torch.compile"): a guard
failed and the frame was compiled again (`recompile`), or the guards checked on every
call cost a share of the step (`dynamo-guard-cost`).
"""

from __future__ import annotations

from collections import defaultdict

import numpy as np

from ..analysis.compile import (
    cache_lookups,
    compile_events,
    compile_id_of,
)
from ..analysis.stepmap import (
    host_cost_by_step,
    mean_step_us,
    step_count,
)
from ..formatting.units import count, fmt_us
from .advice import cuda_graphs_fit
from .base import Evidence, Finding, event_evidence, rule
from .compile_regions import compiled_regions, step_prefix
from .impact import host_cost_hidden


@rule(
    "recompile",
    "torch-compile",
    "a compiled frame was compiled again (new M index or new graph hash)",
)
def recompile(ctx) -> list[Finding]:
    trace = ctx.trace
    calls = compiled_regions(ctx)
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
            event_evidence(
                trace,
                c.index,
                f"frame {frame} runs compilation #{m + 1} ({c.label}): it was recompiled "
                "before the profiled window",
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
    calls = compiled_regions(ctx)
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
                f"{step_prefix(st.number)}{count(n, 'lookup')} + prologue = {fmt_us(guard, 1)}, "
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
