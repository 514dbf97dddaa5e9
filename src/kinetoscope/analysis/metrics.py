"""Headline numbers of a trace's active window, the ones every report quotes.

The active window is the union of the `ProfilerStep#N` windows (the whole trace
when there are none). Host time is the busy time of host threads there (ops,
annotations, runtime calls; merged across threads, so overlap is not counted
twice); device busy time is the union of kernels, copies and memsets launched
there. Device work launched late in the window may run past its end, so the
busy ratio divides by the window stretched to the last such work (it stays
<= 1). Per-step figures are medians over the steps.
"""

from __future__ import annotations

import statistics

from ..trace import Trace
from .steps import step_stats
from .window import window_device_work


def trace_metrics(trace: Trace) -> dict[str, float]:
    stats = step_stats(trace)
    host = sum(s.host_busy_us for s in stats)
    device = sum(s.device_busy_us for s in stats)
    window = sum(s.dur for s in stats)
    work = window_device_work(trace)
    overrun = max(float(trace.end[work].max()) - stats[-1].end, 0.0) if len(work) else 0.0
    return {
        "steps": len(trace.steps),
        "window_us": window,
        "host_time_us": host,
        "device_busy_us": device,
        "device_busy_ratio": device / (window + overrun) if window > 0 else 0.0,
        "host_busy_ratio": host / window if window > 0 else 0.0,
        "kernels": sum(s.kernels for s in stats),
        "launches": sum(s.launches for s in stats),
        "kernels_per_step": statistics.median(s.kernels for s in stats),
        "launches_per_step": statistics.median(s.launches for s in stats),
        "step_time_us": statistics.median(s.dur for s in stats),
    }
