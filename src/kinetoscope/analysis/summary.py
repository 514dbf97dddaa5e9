"""What `kinetoscope summary` reports: the facts of a trace before any judgement."""

from __future__ import annotations

from dataclasses import dataclass

from ..trace import Trace
from ..trace.top_meta import recorded_versions, run_metadata
from .quality import TraceQuality, trace_quality
from .stats import StepFigures, TraceStats, trace_stats
from .table import Ranked, ranked_device, ranked_host, window_key_averages, work_names


@dataclass(frozen=True)
class TraceSummary:
    path: str
    origin_us: float  # absolute start of the trace: the zero of every relative time
    devices: list[dict]
    versions: dict
    #: how kinetoscope recorded the run (workload, size, warm-up, compile, schedule); {} if not
    run: dict
    window_start_us: float
    window_dur_us: float
    steps: list[StepFigures]
    metrics: dict[str, float]
    stats: TraceStats
    #: device work and host rows by self time, shares of the window's closing totals
    #: (`analysis.table.DEVICE_SHARE_BASE`, `HOST_SHARE_BASE`: what explain divides by too)
    top_kernels: list[Ranked]
    top_host_ops: list[Ranked]
    warnings: list[str]
    #: the trust check (grade, reasons, timestamp resolution): analysis.quality
    quality: TraceQuality | None = None
    #: why the trace was loaded out of core (`--max-memory`), None when in memory
    out_of_core: str | None = None


def summarize(trace: Trace, top: int = 5) -> TraceSummary:
    """Devices, versions, window, per-step stats, top device work and host rows by self
    time over the active window: the rows and shares of `table --window` and of explain's
    `hotspot`, so a row's percentage is the same in every command."""
    table = window_key_averages(trace)
    stats = trace_stats(trace)
    steps = stats.steps
    start = steps[0].start if steps else trace.start_time
    return TraceSummary(
        path=trace.path,
        origin_us=stats.origin_us,
        devices=[d.__dict__ for d in trace.devices],
        versions=recorded_versions(trace.meta),
        run=run_metadata(trace.meta),
        window_start_us=trace.rel(start),
        window_dur_us=sum(s.dur for s in steps),
        steps=steps,
        metrics=stats.metrics(),
        stats=stats,
        top_kernels=ranked_device(table, work_names(trace))[:top],
        top_host_ops=ranked_host(table)[:top],
        warnings=list(trace.warnings),
        quality=trace_quality(trace),
        out_of_core=trace.out_of_core,
    )
