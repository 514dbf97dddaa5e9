"""A sweep as plain data: what `report.sweep_render`'s table and figure lay out.

`SweepPoint` is one value of the sweep in explain's figures (`compare.sweep.measure`
fills it; the sweep's JSON is its fields as they are). `SweepDocument` is the whole
sweep as the renderer reads it, built by `compare.sweep_doc.sweep_document`: the
values already printed as the table shows them, the two curves the crossover is
read on, and the rate panel's series, so the renderer recomputes nothing and
imports neither `compare` nor `analysis`.
"""

from __future__ import annotations

from dataclasses import dataclass, field

#: the label of the step-level rate: the step's matmul FLOPs over its busy time
STEP_RATE = "matmul FLOPs / busy time"


@dataclass
class SweepPoint:
    value: float
    trace: str | None = None
    error: str | None = None
    files: list[str] = field(default_factory=list)  # every file its profile run wrote
    has_device: bool = False
    step_us: float | None = None
    host_us: float | None = None  # host busy per step
    device_us: float | None = None  # device busy per step
    busy_ratio: float | None = None
    regime: str | None = None
    #: explain's host-time parts per step (medians): compute (math-op self time, CPU runs
    #: only), dispatch (+ launch), Python/other
    compute_us: float | None = None
    dispatch_us: float | None = None
    other_us: float | None = None
    #: explain's compute share of the window (CPU runs): its verdict's number
    compute_share: float | None = None
    flops: float | None = None  # per step, from matmul shapes
    tflops: float | None = None
    #: GEMMs' achieved FLOP/s / the device's datasheet peak (analysis.roofline), where known
    share_of_peak: float | None = None
    #: per rated op class (gemm, attention, conv): achieved TFLOP/s over the class's own
    #: kernel time (CPU time on a host-only run) and its share of peak where known
    classes: dict[str, dict[str, float | None]] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return self.error is None

    @property
    def overhead_us(self) -> float:
        """A CPU run's time per step outside the math: dispatch plus Python/other."""
        return (self.dispatch_us or 0.0) + (self.other_us or 0.0)


@dataclass
class SweepDocument:
    param: str
    #: "device" (device vs host busy time per step) or "host" (compute vs dispatch +
    #: Python/other): what the runs recorded, and so which columns and curves there are
    mode: str
    points: list[SweepPoint]  # every value in sweep order, failed ones included
    labels: list[str]  # each point's value as the table prints it
    #: (value, work, overhead) per successful point: the time panel's two curves
    curve: list[tuple[float, float, float]]
    crossover: float | None  # where work overtakes overhead, None when they never cross
    #: the rate panel: achieved TFLOP/s per series (STEP_RATE and each rated op class),
    #: and each class's share of peak, as (value, y) lists; empty series left out
    rates: dict[str, list[tuple[float, float]]] = field(default_factory=dict)
    shares: dict[str, list[tuple[float, float]]] = field(default_factory=dict)
