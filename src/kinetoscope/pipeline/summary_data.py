"""A `TraceSummary`, built once: as JSON data (`kinetoscope summary --format json` and the
MCP `summary` tool answer with this one builder, so the two cannot drift apart) and as
the `SummaryDocument` the text renderer (`report.summary_view`) lays out."""

from __future__ import annotations

from dataclasses import asdict, fields
from typing import Any

from ..analysis.kernel_names import display_name
from ..analysis.stats import OUTLIER_FACTOR, STATISTIC, decomposition_text
from ..analysis.summary import TraceSummary
from ..analysis.table import DEVICE_SHARE_BASE, HOST_SHARE_BASE, Ranked
from ..report.summary_model import NAME_WIDTH, RankedLine, StepLine, SummaryDocument


def summary_data(summary: TraceSummary) -> dict[str, Any]:
    """JSON form: times relative to the trace start (`origin_us` is that start, absolute)."""
    data = {
        f.name: getattr(summary, f.name)
        for f in fields(summary)
        if f.name not in ("steps", "stats", "quality")
    }
    data["quality"] = summary.quality.to_dict() if summary.quality is not None else None
    data["top_kernels"] = [asdict(r) for r in summary.top_kernels]
    data["top_host_ops"] = [asdict(r) for r in summary.top_host_ops]
    data["share_base"] = {"top_kernels": DEVICE_SHARE_BASE, "top_host_ops": HOST_SHARE_BASE}
    data["steps"] = [
        {
            "step": s.number,
            "start_us": s.start - summary.origin_us,
            "dur_us": s.dur,
            "host_busy_us": s.host_busy_us,
            "device_busy_us": s.device_busy_us,
            "host_ratio": s.host_ratio,
            "device_ratio": s.device_ratio,
            "kernels": s.kernels,
            "launches": s.launches,
            "syncs": s.syncs,
            "data_wait_us": s.data_wait_us,
            "sync_wait_us": s.sync_wait_us,
            "dispatch_us": s.dispatch_us,
            "other_us": s.other_us,
        }
        for s in summary.steps
    ]
    data["statistics"] = {"labels": STATISTIC, "per_step": summary.stats.spread_dict()}
    return data


def summary_document(summary: TraceSummary) -> SummaryDocument:
    """What the summary's text shows: names shortened, step starts relative, words made."""
    first = summary.steps[0].start if summary.steps else 0.0
    steps = [
        StepLine(
            s.label,
            s.start - first + summary.window_start_us,
            s.dur,
            s.host_busy_us,
            s.device_busy_us,
            s.device_ratio,
            s.kernels,
            s.launches,
        )
        for s in summary.steps
    ]
    step = summary.stats.spreads["step_time_us"]
    q = summary.quality
    return SummaryDocument(
        path=summary.path,
        devices=summary.devices,
        versions=summary.versions,
        run=summary.run,
        window_start_us=summary.window_start_us,
        window_dur_us=summary.window_dur_us,
        metrics=summary.metrics,
        step_median_us=step.median,
        step_mean_us=step.mean,
        step_p90_us=step.p90,
        host_time_text=decomposition_text(summary.metrics),
        outlier_factor=OUTLIER_FACTOR,
        steps=steps,
        top_kernels=[_ranked(r) for r in summary.top_kernels],
        top_host_ops=[_ranked(r) for r in summary.top_host_ops],
        warnings=summary.warnings,
        trust=None if q is None else (q.grade, q.reasons),
        out_of_core=summary.out_of_core,
    )


def _ranked(r: Ranked) -> RankedLine:
    """A row with its name as the column shows it: a kernel's function name without its
    return type (`std::enable_if<...>::type`) or parameter list, cut to the column."""
    return RankedLine(display_name(r.name, NAME_WIDTH), r.calls, r.total_us, r.share)
