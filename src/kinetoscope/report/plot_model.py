"""`kinetoscope plot`'s picture as plain data: what `plotting.trace_figure` draws.

Filled by the build step (`pipeline.plot_data.trace_plot`): busy intervals already
merged per lane and the per-step split already taken from `analysis.stats`, every
time relative to the trace start, so the figure reads no Trace. `StepBand` is shared
with the memory figure, which shades the same steps.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class StepBand:
    """A `ProfilerStep#N` window relative to the trace start (us), for a figure's shading."""

    number: int
    start_us: float
    end_us: float


@dataclass(frozen=True)
class PlotLane:
    """One busy lane: a host thread or a device stream, top to bottom in figure order."""

    label: str
    kind: str  # "host" or "device"
    #: merged busy intervals, (start us relative to the trace start, width us)
    bars: list[tuple[float, float]]


@dataclass
class TracePlot:
    title: str
    span_us: float  # trace end - trace start: picks the time axis' unit
    steps: list[StepBand]
    lanes: list[PlotLane]
    #: per-step bars: a label per step, and {part: us per step}, bottom part first
    step_labels: list[str]
    parts: dict[str, list[float]]
