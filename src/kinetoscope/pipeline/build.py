"""Trace -> Report: run the rules and gather the numbers every renderer shows.

The build step of `explain`: everything the renderers in `report/` lay out is computed
here (or in `sections` and `interactive`), including the order the HTML page reads the
findings in and the words of the host-time split; renderers compute nothing. The
verdict comes from `rules.verdict.classify`, the same call the regime rules make, so
the verdict line and the regime finding always agree; it reads the window account
(`analysis.account`), which the JSON carries as `verdict.account` beside the critical
path (`critical_path`); every figure (metrics, step
rows, outliers) comes from `analysis.stats`, the one statistics module summary, diff
and check read too.
"""

from __future__ import annotations

from collections.abc import Iterable
from functools import partial

import numpy as np

from .._version import __version__
from ..analysis.account.account import WindowAccount
from ..analysis.intervals import merge_indexed
from ..analysis.kernel_names import display_name
from ..analysis.stats import OUTLIER_FACTOR, STATISTIC, TraceStats, trace_stats
from ..analysis.steps import host_activity_mask
from ..analysis.window import in_window, window_device_work
from ..report.html import notebook_html
from ..report.model import Report, StepRow, Timeline, TimelineMark, TraceFacts, Verdict
from ..rules.engine import load_rules, run_rules
from ..rules.verdict import classify
from ..trace import Trace
from ..trace.top_meta import recorded_versions, run_metadata
from .interactive import interactive_data
from .kernels_section import kernels_section
from .lines_section import lines_section
from .modules_section import modules_section
from .moe_section import moe_section
from .path_section import path_section
from .sections import (
    communication_section,
    kernel_types_section,
    llm_section,
    quality_section,
    streams_section,
)

#: Timeline intervals closer than this share of the window are drawn as one.
TIMELINE_RESOLUTION = 1 / 2000


def build_report(
    trace: Trace,
    config: dict[str, dict[str, float]] | None = None,
    rules: Iterable[str] | None = None,
) -> Report:
    wanted = list(rules) if rules is not None else list(load_rules())
    outcome = run_rules(trace, config, wanted)
    call = classify(trace, config)
    factor = float((config or {}).get("step-outlier", {}).get("ratio", OUTLIER_FACTOR))
    stats = trace_stats(trace, factor)
    metrics = stats.metrics()
    steps = _step_rows(trace, stats)
    window = {
        "start_us": steps[0].start_us,
        "end_us": steps[-1].start_us + steps[-1].dur_us,
        "dur_us": metrics["window_us"],
        "steps": len(trace.steps),
    }
    timeline = _timeline(trace, stats, window, outcome.findings)
    return Report(
        version=__version__,
        trace=TraceFacts(
            path=trace.path,
            origin_us=stats.origin_us,
            events=len(trace),
            devices=[
                {
                    "id": d.id,
                    "name": d.name,
                    "vendor": d.vendor,
                    "compute_capability": d.compute_capability,
                    "memory_bytes": d.memory_bytes,
                    "sm_count": d.sm_count,
                }
                for d in trace.devices
            ],
            versions=recorded_versions(trace.meta),
            window=window,
            rank=trace.meta.rank,
            warnings=list(trace.warnings),
            out_of_core=trace.out_of_core,
            run=run_metadata(trace.meta),
        ),
        verdict=Verdict(
            regime=call.regime,
            summary=call.summary,
            host_time_us=call.host_time_us,
            device_busy_us=call.device_busy_us,
            ratio=call.ratio,
            device=call.device,
            decomposition=call.steady,
            account=call.shares,
            account_us=_account_us(call.account),
            reasons=list(call.reasons),
        ),
        decomposition_words=dict(call.account.words()),
        critical_path=path_section(trace),
        steps=steps,
        metrics=metrics,
        statistics={"labels": STATISTIC, "per_step": stats.spread_dict()},
        findings=outcome.findings,
        not_checked=outcome.not_checked,
        rules=wanted,
        timeline=timeline,
        quality=quality_section(trace),
        kernel_types=kernel_types_section(trace),
        streams=streams_section(trace),
        communication=communication_section(trace),
        llm=llm_section(trace),
        moe=moe_section(trace),
        modules=modules_section(trace),
        kernels=kernels_section(trace),
        lines=lines_section(trace),
        interactive=partial(interactive_data, trace, outcome.findings, timeline.steps),
        notebook_html=notebook_html,
    )


def _account_us(account: WindowAccount) -> dict:
    """The account in microseconds: each class, the steady part, the window, and the
    one-time and profiler time by cause."""
    detail = account.to_dict()
    return {
        "window_us": account.window_us,
        "steady_us": detail["steady_us"],
        **detail["us"],
        "causes": detail["causes"],
        "device_is_cpu": account.on_cpu,
    }


def _step_rows(trace: Trace, stats: TraceStats) -> list[StepRow]:
    rows = []
    for s in stats.steps:
        factor = stats.outlier_factor(s.number)
        outlier = f"{factor:.1f}x the median step" if factor is not None else None
        rows.append(
            StepRow(
                label=s.label,
                number=s.number,
                start_us=trace.rel(s.start),
                dur_us=s.dur,
                host_busy_us=s.host_busy_us,
                device_busy_us=s.device_busy_us,
                kernels=s.kernels,
                launches=s.launches,
                syncs=s.syncs,
                data_wait_us=s.data_wait_us,
                sync_wait_us=s.sync_wait_us,
                dispatch_us=s.dispatch_us,
                other_us=s.other_us,
                outlier=outlier,
                compute_us=s.compute_us,
            )
        )
    return rows


def _lane(trace: Trace, index: np.ndarray, resolution: float):
    """Merged busy intervals, relative to the trace start, coarsened to `resolution` us.

    Merged a block of `index` at a time and before the shift to trace-relative times:
    gathering and shifting whole copied the columns per host event of the window, the
    peak of `explain`'s memory. (A gap the shift rounds to zero is below `resolution`
    either way.)"""
    s, e = merge_indexed(trace.ts, trace.end, index)
    if not len(s):
        return []
    s -= trace.start_time
    e -= trace.start_time
    joined = np.ones(len(s), dtype=bool)
    joined[1:] = s[1:] - e[:-1] > resolution
    first = np.flatnonzero(joined)
    # merged intervals are disjoint and sorted: a run ends where its last one ends
    out_e = e[np.append(first[1:] - 1, len(s) - 1)]
    return [(round(float(a), 3), round(float(b), 3)) for a, b in zip(s[first], out_e, strict=True)]


def _timeline(trace: Trace, stats: TraceStats, window: dict, findings) -> Timeline:
    resolution = max(window["end_us"] - window["start_us"], 1.0) * TIMELINE_RESOLUTION
    host = trace.by_start(host_activity_mask(trace))  # in order: the merge skips its sort
    host = host[in_window(trace, trace.ts, host)]
    work = window_device_work(trace)
    marks = [
        # the name as every view shows it (no `std::enable_if<...>::type`, CUTLASS read)
        TimelineMark(
            f.id,
            f.severity,
            ev.ts_us,
            ev.dur_us or 0.0,
            display_name(ev.name, 200) if ev.name else ev.text,
        )
        for f in findings
        for ev in f.evidence
        if ev.ts_us is not None
    ]
    lanes = {"host": _lane(trace, host, resolution), "device": _lane(trace, work, resolution)}
    # device work launched in the last step may finish after the host window closes
    end = max([window["end_us"]] + [lane[-1][1] for lane in lanes.values() if lane])
    return Timeline(
        start_us=window["start_us"],
        end_us=end,
        lanes=lanes,
        steps=[(s.label, trace.rel(s.start), trace.rel(s.end)) for s in stats.steps],
        marks=marks,
    )
