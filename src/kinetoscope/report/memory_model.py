"""`kinetoscope memory` as plain data: what its text, its figure and its JSON lay out.

Filled by the build step (`pipeline.memory_data.memory_document`) from
`analysis.memory.memory_timeline`, so the renderer (`report.memory_render`) never
reads a Trace: op labels are already `op in parent` strings, and every time is
already relative to the trace start (what Perfetto shows, and the zero of the
figure's time axis).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from .plot_model import StepBand


@dataclass(frozen=True)
class MemoryAllocation:
    at_us: float  # relative to the trace start
    nbytes: int
    op: str  # `aten::empty in aten::conv2d`, or `(no enclosing op)`
    step: int | None


@dataclass(frozen=True)
class MemoryChurn:
    """One step's allocator traffic (the fields, in order, of `analysis.memory.StepChurn`:
    the JSON writes them as they are)."""

    step: int
    allocated_bytes: int
    freed_bytes: int
    net_bytes: int
    peak_bytes: float
    reserved_grown_bytes: int
    reserved_released_bytes: int


@dataclass
class MemoryDevice:
    device: str  # e.g. "cuda:0", "cpu"
    events: int
    relative: bool  # allocated rebuilt from a running sum (no totals in the trace)
    peak_bytes: float
    peak: MemoryAllocation  # the allocation that reached the peak
    #: each instant relative to the trace start (us), and the bytes after it
    t_us: np.ndarray
    allocated: np.ndarray
    reserved: np.ndarray | None  # None: the trace carries no reserved totals
    largest: list[MemoryAllocation] = field(default_factory=list)
    churn: list[MemoryChurn] = field(default_factory=list)

    @property
    def peak_reserved_bytes(self) -> float | None:
        return None if self.reserved is None else float(self.reserved.max())


@dataclass
class MemoryDocument:
    path: str  # the trace file, as given
    devices: list[MemoryDevice]
    steps: list[StepBand]

    @property
    def events(self) -> int:
        return sum(d.events for d in self.devices)
