"""A `TraceSummary` as JSON data: `kinetoscope summary --format json` and the MCP `summary`
tool answer with this one builder, so the two cannot drift apart."""

from __future__ import annotations

from dataclasses import asdict, fields
from typing import Any

from ..analysis.stats import STATISTIC
from ..analysis.summary import TraceSummary
from ..analysis.table import DEVICE_SHARE_BASE, HOST_SHARE_BASE


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
