"""What `kinetoscope summary` reports: the facts of a trace before any judgement."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..trace import Cat, Trace
from .quality import TraceQuality, trace_quality
from .stats import StepFigures, TraceStats, trace_stats
from .steps import host_activity_mask


@dataclass(frozen=True)
class Ranked:
    """A name ranked by time: calls, total time, and share of the relevant total."""

    name: str
    calls: int
    total_us: float
    share: float


@dataclass(frozen=True)
class TraceSummary:
    path: str
    origin_us: float  # absolute start of the trace: the zero of every relative time
    devices: list[dict]
    versions: dict
    window_start_us: float
    window_dur_us: float
    steps: list[StepFigures]
    metrics: dict[str, float]
    stats: TraceStats
    top_kernels: list[Ranked]
    top_host_ops: list[Ranked]
    warnings: list[str]
    #: the trust check (grade, reasons, timestamp resolution): analysis.quality
    quality: TraceQuality | None = None
    #: why the trace was loaded out of core (`--max-memory`), None when in memory
    out_of_core: str | None = None


def _rank(trace: Trace, index: np.ndarray, values: np.ndarray, total: float, top: int):
    if not len(index):
        return []
    ids = trace.name_id[index]
    sums = np.bincount(ids, weights=values, minlength=len(trace.names))
    counts = np.bincount(ids, minlength=len(trace.names))
    best = np.argsort(-sums, kind="stable")[:top]
    return [
        Ranked(
            trace.names[i], int(counts[i]), float(sums[i]), float(sums[i] / total) if total else 0
        )
        for i in best
        if counts[i] > 0
    ]


def summarize(trace: Trace, top: int = 5) -> TraceSummary:
    """Devices, versions, window, per-step stats, top kernels (device time) and host ops
    (self time, since totals are dominated by wrappers like module calls)."""
    kernels = trace.kernels
    kernel_total = float(trace.dur[kernels].sum())
    ops = np.flatnonzero(host_activity_mask(trace) & trace.mask(Cat.CPU_OP))
    self_time = trace.self_time[ops]
    versions = dict(trace.meta.versions)
    if trace.meta.kinetoscope:
        versions.update({k: v for k, v in trace.meta.kinetoscope.items() if k.endswith("version")})
    stats = trace_stats(trace)
    steps = stats.steps
    start = steps[0].start if steps else trace.start_time
    return TraceSummary(
        path=trace.path,
        origin_us=stats.origin_us,
        devices=[d.__dict__ for d in trace.devices],
        versions=versions,
        window_start_us=trace.rel(start),
        window_dur_us=sum(s.dur for s in steps),
        steps=steps,
        metrics=stats.metrics(),
        stats=stats,
        top_kernels=_rank(trace, kernels, trace.dur[kernels], kernel_total, top),
        top_host_ops=_rank(trace, ops, self_time, float(self_time.sum()), top),
        warnings=list(trace.warnings),
        quality=trace_quality(trace),
        out_of_core=trace.out_of_core,
    )
