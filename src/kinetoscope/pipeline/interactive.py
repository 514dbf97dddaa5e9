"""What only the interactive HTML report shows: the event timeline and the full
kernel and op tables.

Built on demand (the `Report.interactive` callable, which the build step sets)
because it costs a pass over every event and the text, Markdown and JSON outputs
never read it.
"""

from __future__ import annotations

from ..analysis.table import window_key_averages, work_names
from ..rules.base import Finding
from ..trace import Trace
from .timeline_data import timeline_events

#: Rows per table: the long tail is in `kinetoscope table`.
TABLE_ROWS = 60


def interactive_data(
    trace: Trace, findings: list[Finding], steps: list[tuple[str, float, float]]
) -> dict:
    """{"timeline": payload, "kernels": rows, "ops": rows} for the HTML renderer."""
    table = window_key_averages(trace)
    # the rows and bases of `summary` and `hotspot` (analysis.table.ranked_*): device
    # work only (not the device copies of annotations), shares of the closing totals
    work = work_names(trace)
    device = [r for r in table.rows if r.is_device and r.name in work and r.self_device_us > 0]
    host = [r for r in table.rows if not r.is_device and r.calls > 0]
    device.sort(key=lambda r: (-r.self_device_us, r.name))
    host.sort(key=lambda r: (-r.self_cpu_us, r.name))
    device_total = table.self_device_total_us or 1.0
    host_total = table.self_cpu_total_us or 1.0
    return {
        "timeline": timeline_events(trace, findings, steps),
        "kernels": [
            {
                "name": r.name,
                "calls": r.calls,
                "total_us": r.self_device_us,
                "mean_us": r.self_device_us / r.calls,
                "share": r.self_device_us / device_total,
            }
            for r in device[:TABLE_ROWS]
        ],
        "ops": [
            {
                "name": r.name,
                "calls": r.calls,
                "self_us": r.self_cpu_us,
                "total_us": r.cpu_total_us,
                "device_us": r.device_total_us,
                "share": r.self_cpu_us / host_total,
            }
            for r in host[:TABLE_ROWS]
        ],
    }
