"""`kinetoscope summary` as plain data: what its text (`report.summary_view`) lays out.

Filled by the build step (`pipeline.summary_data.summary_document`) from
`analysis.summary.summarize`: kernel names already shortened to the column (their
return type and parameter list dropped), step starts already relative to the
trace start, the host-time split already worded, so the renderer only formats.
"""

from __future__ import annotations

from dataclasses import dataclass

#: Characters of a name column: the builder shortens names to it, the table folds at it.
NAME_WIDTH = 60


@dataclass(frozen=True)
class RankedLine:
    name: str  # shortened to NAME_WIDTH, still as the trace wrote it (not escaped)
    calls: int
    total_us: float
    share: float  # of the side's closing total (self device or self CPU)


@dataclass(frozen=True)
class StepLine:
    label: str
    start_us: float  # relative to the trace start
    dur_us: float
    host_busy_us: float
    device_busy_us: float
    device_ratio: float
    kernels: int
    launches: int


@dataclass
class SummaryDocument:
    path: str
    devices: list[dict]
    versions: dict
    run: dict
    window_start_us: float
    window_dur_us: float
    #: the window's figures (`analysis.stats`), read by name: steps, host/device busy
    #: and ratios, outlier_steps, compute_share
    metrics: dict[str, float]
    #: median, mean and p90 of the step time
    step_median_us: float
    step_mean_us: float
    step_p90_us: float
    host_time_text: str  # the window account, worded as every renderer words it
    outlier_factor: float  # a step over this many times the median is an outlier
    steps: list[StepLine]
    top_kernels: list[RankedLine]
    top_host_ops: list[RankedLine]
    warnings: list[str]
    #: the trust check's grade and reasons; None when it did not run
    trust: tuple[str, list[str]] | None = None
    out_of_core: str | None = None  # why the trace was loaded out of core
