"""Headline numbers of a trace's active window, shared by summary, explain, diff, check."""

from __future__ import annotations

import statistics

from ..trace import Trace
from .steps import step_stats


def trace_metrics(trace: Trace) -> dict[str, float]:
    """Totals over the profiled steps (or the whole trace without steps) and per-step medians.

    `device_busy_ratio` is device busy time over window time: the share of the
    window in which at least one kernel, copy or memset ran.
    """
    steps = step_stats(trace)
    window = sum(s.dur for s in steps)
    host = sum(s.host_busy_us for s in steps)
    device = sum(s.device_busy_us for s in steps)
    return {
        "steps": len(trace.steps),
        "window_us": window,
        "host_time_us": host,
        "device_busy_us": device,
        "host_busy_ratio": host / window if window > 0 else 0.0,
        "device_busy_ratio": device / window if window > 0 else 0.0,
        "step_time_us": statistics.median(s.dur for s in steps),
        "kernels_per_step": statistics.median(s.kernels for s in steps),
        "launches_per_step": statistics.median(s.launches for s in steps),
    }
