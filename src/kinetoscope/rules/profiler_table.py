"""Profiler-table rules: what `key_averages().table()` shows at a glance.

They read the table rebuilt from the trace (`analysis.table.key_averages`)
over the active window (the profiled steps, or the whole trace without
steps), the window every other number of the report uses: the columns are
the profiler's own, the rows only count what ran inside the steps.
"""

from __future__ import annotations

import statistics

import numpy as np

from ..analysis.dataloader import next_events
from ..analysis.intervals import merge
from ..analysis.kernel_names import display_name
from ..analysis.stepmap import step_count
from ..analysis.table import (
    KeyAverages,
    TableRow,
    ranked_device,
    ranked_host,
    window_key_averages,
    work_names,
)
from ..analysis.window import in_window
from ..formatting.units import fmt_pct, fmt_us
from ..trace import Cat, Trace
from ..trace.tree import children_of
from .advice import compiled_run
from .base import Evidence, Finding, rule
from .impact import host_saving_per_step
from .training import DATA_WAIT


def _table(ctx) -> KeyAverages:
    return ctx.analysis(window_key_averages)


def _op_names(trace: Trace) -> set[str]:
    """Names of host operator events (aten ops and friends, not annotations or runtime calls)."""
    ops = trace.mask(Cat.CPU_OP) & (trace.lane_kind == 1)
    return {trace.names[i] for i in np.unique(trace.name_id[ops])}


@rule(
    "hotspot",
    "profiler-table",
    "one row owns most of the device time (CPU self time in host-only traces)",
    min_share=0.5,
)
def hotspot(ctx) -> list[Finding]:
    table = _table(ctx)
    min_share = ctx.threshold("min_share")
    # the ranking and base `summary` and the HTML tables show (analysis.table)
    if table.has_device and table.self_device_total_us > 0:
        ranked = ranked_device(table, work_names(ctx.trace))
        total, side = table.self_device_total_us, "device"
    else:
        ranked = ranked_host(table)
        total, side = table.self_cpu_total_us, "CPU"
    if not ranked or total <= 0:
        return []
    top = ranked[0]
    share = top.share
    if share < min_share:
        return []
    evidence = [
        Evidence(
            f"self {side} {fmt_us(top.total_us)} of {fmt_us(total)} {_where(ctx.trace)} "
            f"({fmt_pct(share)}), {top.calls} calls",
            name=top.name,
            value=top.total_us,
            unit="us",
        )
    ] + [
        Evidence(f"next: self {side} {fmt_us(r.total_us)} ({fmt_pct(r.share)})", name=r.name)
        for r in ranked[1:3]
    ]
    return [
        Finding(
            id="hotspot",
            severity="info",
            title=(
                f"Hotspot: {_short(top.name)} owns {fmt_pct(share)} of self {side} time "
                f"(threshold {fmt_pct(min_share, 0)})"
            ),
            explanation=(
                f"{top.name} accounts for {fmt_pct(share)} of the self {side} total (the "
                f"profiler table's closing line, counted {_where(ctx.trace)}): anything else is "
                "small next to it."
            ),
            suggestion=(
                "Start optimizing there: its shape, dtype and the kernel the library picked "
                "(see kernel-name), or whether it runs more often than needed."
                if side == "device"
                else "Start optimizing there: what it does per call (its inputs, a faster "
                "library or algorithm) and whether it runs more often than needed."
            ),
            impact_us=0.0,
            evidence=evidence,
            measured={
                "name": top.name,
                "share": round(share, 5),
                "self_us": round(top.total_us, 3),
                "total_us": round(total, 3),
                "threshold": min_share,
            },
        )
    ]


@rule(
    "call-count",
    "profiler-table",
    "an op is called far more often than the others",
    factor=10.0,
    min_calls=100,
)
def call_count(ctx) -> list[Finding]:
    trace = ctx.trace
    table = _table(ctx)
    names = _op_names(trace)
    rows = [r for r in table.rows if not r.is_device and r.name in names]
    if len(rows) < 2:
        return []
    median = statistics.median(r.calls for r in rows)
    factor, min_calls = ctx.threshold("factor"), ctx.threshold("min_calls")
    hot = [r for r in rows if r.calls >= min_calls and r.calls >= factor * median]
    if not hot:
        return []
    hot.sort(key=lambda r: -r.self_cpu_us)
    steps = step_count(trace)
    top = hot[0]

    def per_step(calls: int) -> str:
        return f"{calls / steps:g} per step, " if trace.steps else ""

    in_loader = _share_in_dataloader(trace, {r.name for r in hot})
    compiled = compiled_run(ctx)

    evidence = [
        Evidence(
            f"{r.calls} calls ({per_step(r.calls)}{r.calls / median:.0f}x the median op), "
            f"self CPU {fmt_us(r.self_cpu_us / steps)}{' per step' if trace.steps else ''}, "
            f"{fmt_us(r.self_cpu_us / r.calls)} per call",
            name=r.name,
            value=r.calls,
            unit="calls",
        )
        for r in hot[:5]
    ]
    return [
        Finding(
            id="call-count",
            severity="warn" if top.self_cpu_us / steps > 0.1 * _host_per_step(ctx) else "info",
            title=(
                f"Call count: {top.name} runs {top.calls} times, {top.calls / median:.0f}x the "
                f"median op ({median:g} calls; thresholds {factor:g}x and {min_calls:g} calls)"
            ),
            explanation=(
                "Each call is cheap, but the per-call cost ("
                + (
                    "Python, dispatcher, a kernel launch"
                    if trace.has_device
                    else "Python, the dispatcher, the framework code around the op"
                )
                + ") is paid every time and adds up: small ops in a Python loop are the usual "
                "cause."
                + (
                    f" {in_loader:.0%} of these calls run inside DataLoader.__next__: they are "
                    "the data loading's own work (collate, transforms), part of the data wait."
                    if in_loader >= 0.5
                    else ""
                )
            ),
            suggestion=(
                "Batch the work into fewer, larger calls (vectorize the loop, torch.stack/cat, "
                "foreach ops)"
                + (
                    "; the run already uses torch.compile: these calls run outside its compiled "
                    "regions (a graph break or code it does not trace)."
                    if compiled
                    else ", or fuse it with torch.compile."
                )
            ),
            impact_us=host_saving_per_step(ctx, sum(r.self_cpu_us for r in hot)),
            evidence=evidence,
            # calls made while fetching a batch are the data wait, whichever rule sees it
            cause=(DATA_WAIT,) if in_loader >= 0.5 else (),
            measured={
                "name": top.name,
                "calls": top.calls,
                "median_calls": median,
                "factor": factor,
                "min_calls": min_calls,
                "share_in_dataloader": round(in_loader, 4),
            },
        )
    ]


def _share_in_dataloader(trace: Trace, names: set[str]) -> float:
    """Share of the window's calls of `names` that start inside a DataLoader `__next__`."""
    ids = trace.name_ids_matching(lambda n: n in names)
    calls = np.flatnonzero(
        np.isin(trace.name_id, ids) & trace.mask(Cat.CPU_OP) & (trace.lane_kind == 1)
    )
    calls = calls[in_window(trace, trace.ts[calls])]
    nxt = next_events(trace)
    if not len(calls) or not len(nxt):
        return 0.0
    starts, ends = merge(trace.ts[nxt], trace.end[nxt])
    k = np.searchsorted(starts, trace.ts[calls], side="right") - 1
    inside = (k >= 0) & (trace.ts[calls] < ends[np.maximum(k, 0)])
    return float(inside.mean())


def _host_per_step(ctx) -> float:
    from ..analysis.stats import trace_metrics

    m = ctx.analysis(trace_metrics)
    return m["host_time_us"] / step_count(ctx.trace)


@rule(
    "deep-child-cost",
    "profiler-table",
    "an op's total time is mostly spent in its children",
    factor=10.0,
    min_share=0.1,
)
def deep_child_cost(ctx) -> list[Finding]:
    trace = ctx.trace
    table = _table(ctx)
    names = _op_names(trace)
    factor, min_share = ctx.threshold("factor"), ctx.threshold("min_share")
    whole = table.self_cpu_total_us
    deep = [
        r
        for r in table.rows
        if not r.is_device
        and r.name in names
        and whole > 0
        and r.cpu_total_us >= min_share * whole
        and r.cpu_total_us >= factor * r.self_cpu_us
    ]
    if not deep:
        return []
    children = _heaviest_children(trace, {r.name for r in deep})
    deep_names = {r.name for r in deep}
    # a wrapper whose heaviest child is itself a wrapper is reported through that child
    deep = [r for r in deep if r.name in children and children[r.name][0] not in deep_names]
    if not deep:
        return []
    deep.sort(key=lambda r: -r.cpu_total_us)
    evidence = []
    for r in deep[:5]:
        child, child_us, _ = children[r.name]
        evidence.append(
            Evidence(
                f"CPU total {fmt_us(r.cpu_total_us)} vs self {fmt_us(r.self_cpu_us)} "
                f"({_ratio(r)}); its heaviest child {child} owns {fmt_us(child_us)} "
                f"({fmt_pct(child_us / r.cpu_total_us)})",
                name=r.name,
                value=r.cpu_total_us,
                unit="us",
            )
        )
    top = deep[0]
    child, child_us, count = children[top.name]
    where = (
        f"the time is in {child}"
        if child_us >= 0.5 * top.cpu_total_us
        else f"spread over {count} kinds of children ({child} the largest)"
    )
    return [
        Finding(
            id="deep-child-cost",
            severity="info",
            title=(
                f"Deep child cost: {top.name} takes {fmt_us(top.cpu_total_us)}, {_ratio(top)}; "
                f"{where} (threshold {factor:g}x)"
            ),
            explanation=(
                "In the profiler table these rows have a large CPU total but a small self "
                "time: they are wrappers, and the cost lives in what they call."
            ),
            suggestion=f"Look at the child that owns the time ({child}) rather than the wrapper.",
            impact_us=0.0,
            evidence=evidence,
            measured={
                "name": top.name,
                "cpu_total_us": round(top.cpu_total_us, 3),
                "self_cpu_us": round(top.self_cpu_us, 3),
                "factor": factor,
                "min_share": min_share,
            },
        )
    ]


def _where(trace: Trace) -> str:
    """Which events the table counts, said next to every total taken from it."""
    return "in the active window" if trace.steps else "over the whole trace"


def _short(name: str, limit: int = 60) -> str:
    """A kernel name fit for a title: no return type, no C++ argument list, at most `limit`
    characters (`std::enable_if<!(false), void>::type gemvx::kernel<...>(...)` shows
    `gemvx::kernel<...>`, not `std::enable_if<!`)."""
    return display_name(name, limit)


def _ratio(row: TableRow) -> str:
    if row.self_cpu_us <= 0:
        return "all"
    return f"{row.cpu_total_us / row.self_cpu_us:.0f}x its self time"


def _heaviest_children(trace: Trace, names: set[str]) -> dict[str, tuple[str, float, int]]:
    """For each parent name: (heaviest direct-child name, its summed duration, child names),
    over parents in the active window (as the table the rule reads)."""
    parent = trace.parent
    wanted = np.zeros(max(len(trace.names), 1), dtype=bool)
    wanted[[trace.name_index[n] for n in names if n in trace.name_index]] = True
    # children of the wanted parents first (few), then the window: filtering every child
    # by the window first gathered per-event copies, the peak of `explain` at 5 GB.
    # Python frames count too: self time excludes them as well
    child = children_of(parent, wanted[trace.name_id])
    child = child[in_window(trace, trace.ts[parent[child]])]
    # one group per (parent name, child name); durations summed in event order, as a
    # running sum per pair would (`add.at` adds unbuffered, in index order)
    width = max(len(trace.names), 1)
    pair = trace.name_id[parent[child]].astype(np.int64) * width + trace.name_id[child]
    pairs, first, group = np.unique(pair, return_index=True, return_inverse=True)
    sums = np.zeros(len(pairs))
    np.add.at(sums, group.reshape(-1), trace.dur[child])
    out: dict[str, tuple[str, float, int]] = {}
    # pairs in order of first appearance: the first of equal sums stays the heaviest
    for g in np.argsort(first, kind="stable").tolist():
        owner_id, child_id = divmod(int(pairs[g]), width)
        owner, total = trace.names[owner_id], float(sums[g])
        best = out.get(owner)
        if best is None:
            out[owner] = (trace.names[child_id], total, 1)
        elif total > best[1]:
            out[owner] = (trace.names[child_id], total, best[2] + 1)
        else:
            out[owner] = (best[0], best[1], best[2] + 1)
    return out
