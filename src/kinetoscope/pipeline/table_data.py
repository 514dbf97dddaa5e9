"""The profiler's statistical table as JSON data: `kinetoscope table --format json` and the
MCP `table` tool answer with this one builder, so the two cannot drift apart."""

from __future__ import annotations

from typing import Any

from ..analysis.table import KeyAverages, key_averages
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
