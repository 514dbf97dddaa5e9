"""The profiler's statistical table as plain data: what `report.table_text` lays out.

Filled by the build step (`pipeline.table_data.profiler_table`) from
`analysis.table.key_averages`, already cut to the rows shown and with the per-call
averages computed, so the renderer only formats.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class ProfilerRow:
    name: str
    calls: int
    self_cpu_us: float
    cpu_total_us: float
    cpu_avg_us: float
    self_device_us: float
    device_total_us: float
    device_avg_us: float


@dataclass(frozen=True)
class ProfilerTable:
    rows: list[ProfilerRow]  # the rows shown, in sort order
    #: the totals of every row, shown or not: the percent columns divide by them
    self_cpu_total_us: float
    self_device_total_us: float
    has_device: bool  # the device columns and the CUDA total are shown
