"""The profiler's statistical table, built once: as JSON data (`kinetoscope table --format
json` and the MCP `table` tool answer with this one builder, so the two cannot drift
apart) and as the `ProfilerTable` the text renderer (`report.table_text`) lays out."""

from __future__ import annotations

from typing import Any

from ..analysis.table import KeyAverages, key_averages
from ..report.table_model import ProfilerRow, ProfilerTable
from ..trace import Trace


def default_sort(trace: Trace) -> str:
    """The profiler's usual key: device time where the trace has device work, else CPU."""
    return "self_device_time_total" if trace.has_device else "self_cpu_time_total"


def table_data(
    trace: Trace, sort_by: str = "", row_limit: int = -1, window: bool = False
) -> dict[str, Any]:
    """`key_averages` sorted by `sort_by` (default: `default_sort`), the first `row_limit`
    rows (-1: all), over the whole trace or the active `window`."""
    key = sort_by or default_sort(trace)
    result: KeyAverages = key_averages(trace, sort_by=key, window=window)
    rows = result.rows if row_limit < 0 else result.rows[:row_limit]
    return {
        "sort_by": key,
        "scope": "active window" if window else "whole trace",
        "self_cpu_total_us": result.self_cpu_total_us,
        "self_device_total_us": result.self_device_total_us,
        "rows": [dict(r.__dict__) for r in rows],
        "trimmed": {"rows": len(result.rows) - len(rows)},
    }


def profiler_table(result: KeyAverages, row_limit: int = 100) -> ProfilerTable:
    """The first `row_limit` rows of `result` (-1: all) as the text table shows them."""
    rows = result.rows if row_limit < 0 else result.rows[:row_limit]
    shown = [
        ProfilerRow(
            r.name,
            r.calls,
            r.self_cpu_us,
            r.cpu_total_us,
            r.cpu_avg_us,
            r.self_device_us,
            r.device_total_us,
            r.device_avg_us,
        )  # fmt: skip
        for r in rows
    ]
    return ProfilerTable(
        shown, result.self_cpu_total_us, result.self_device_total_us, result.has_device
    )
