"""The records a diff is made of: the two runs, each side's figures, and the paired
steps, kernels, ops and findings. `diff` fills them in; `render` and `conclusion`
read them; `to_dict` is the JSON form.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from ..analysis.steps import StepStats
from ..files.own_files import signature
from ..rules.base import Finding
from ..trace import Trace
from .decompose import Component
from .environment import Environment
from .types import TypeChange


@dataclass
class Run:
    """One side of a diff: the trace and what the rules said about it."""

    trace: Trace
    findings: list[Finding] = field(default_factory=list)
    regime: str | None = None
    #: (label, start us, end us) from the trace start: the step bands `explain` draws
    #: on its timeline, so the HTML diff draws each run's timeline the same way
    steps: list[tuple[str, float, float]] = field(default_factory=list)


@dataclass
class Side:
    """One run's figures (medians per step; `device_busy_ratio` over the window, as in
    every command), and what it ran on."""

    path: str
    steps: int
    has_steps: bool
    devices: list[str]
    vendors: list[str]
    regime: str | None
    step_time_us: float
    host_time_us: float
    device_busy_us: float
    device_busy_ratio: float
    kernels_per_step: float
    launches_per_step: float
    #: the median step is the device's busy time, longer than the host's window
    device_paced: bool = False


@dataclass
class StepPair:
    position: int
    a: StepStats | None
    b: StepStats | None


@dataclass
class KernelRow:
    key: str
    display: str
    status: str  # unchanged | changed | new | gone | replaced
    calls_a: float  # per step
    calls_b: float
    us_a: float  # device time per step
    us_b: float
    example: str  # a raw name (A's where both runs have it)
    #: for `replaced`: B's kernel and what the dispatcher changed (layout nn -> tn, ...)
    replacement: str = ""
    change: str = ""


@dataclass
class KernelDiff:
    comparable: bool
    reason: str  # why kernels cannot be matched, when they cannot
    rows: list[KernelRow] = field(default_factory=list)
    #: when names cannot be matched: device time by kind of work (gemm, attention, ...)
    by_kind: list[KernelRow] = field(default_factory=list)
    #: ... and the top kernels of each side
    top_a: list[KernelRow] = field(default_factory=list)
    top_b: list[KernelRow] = field(default_factory=list)

    def by_status(self, status: str) -> list[KernelRow]:
        return [r for r in self.rows if r.status == status]


@dataclass
class OpRow:
    name: str
    status: str  # unchanged | changed | appeared | vanished
    calls_a: float  # per step
    calls_b: float
    self_us_a: float  # self CPU time per step
    self_us_b: float
    total_us_a: float
    total_us_b: float


@dataclass
class FindingRow:
    id: str
    status: str  # appeared | disappeared | severity changed | unchanged
    severity_a: str | None
    severity_b: str | None
    title: str
    impact_us_a: float
    impact_us_b: float


@dataclass(frozen=True)
class Waits:
    """Host time blocked on the device in one run, over the whole window (inside steps
    and outside them), from `analysis.syncs` (the same sites the sync-wait figures
    count)."""

    total_us: float = 0.0
    sites: int = 0
    #: the blocking call and the op around it holding the most wait ("" when none)
    top_call: str = ""
    top_site: str = ""
    #: the window the waits fall in (the trace's span), to say what is small
    window_us: float = 0.0


@dataclass
class TraceDiff:
    a: Side
    b: Side
    steps: list[StepPair]
    kernels: KernelDiff
    ops: list[OpRow]
    findings: list[FindingRow]
    #: what differs outside the program: devices, versions, profiler settings, steps
    environment: Environment = field(default_factory=Environment)
    #: the per-step change split into device busy and the host parts, with noise
    decomposition: list[Component] = field(default_factory=list)
    #: device work by type in each run, and what appeared or vanished
    types: list[TypeChange] = field(default_factory=list)
    #: where each run's host blocks on the device (A, B)
    waits: tuple[Waits, Waits] = (Waits(), Waits())
    conclusion: str = ""
    #: both runs' LLM passes per phase, TTFT and TPOT (compare/llm_diff.py); {} without
    llm: dict[str, Any] = field(default_factory=dict)
    #: both runs' collectives per family: time, per step, exposed, bus bandwidth
    #: (compare/comm_diff.py); {} when neither run holds a collective
    communication: dict[str, Any] = field(default_factory=dict)
    #: both runs' MoE parts per step, dispatch and worst load (compare/moe_diff.py); {} without
    moe: dict[str, Any] = field(default_factory=dict)
    #: each module path's time per step in both runs (compare/modules_diff.py); {} when
    #: neither run has module ranges
    modules: dict[str, Any] = field(default_factory=dict)
    #: both runs' Tensor Core share and estimated occupancy, and the kernels they share
    #: (compare/kernel_view_diff.py); {} when neither run has kernels
    kernel_view: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        out = asdict(self)
        out["steps"] = [
            {
                "position": p.position,
                "a": _step_dict(p.a),
                "b": _step_dict(p.b),
            }
            for p in self.steps
        ]
        return out

    def document(self) -> dict[str, Any]:
        """The JSON document `diff --format json` writes: `to_dict` under the signature
        `explain DIR` knows the file by (files/own_files)."""
        return {**signature("diff"), **self.to_dict()}


def _step_dict(s: StepStats | None) -> dict[str, Any] | None:
    if s is None:
        return None
    return {
        "step": s.number,
        "step_time_us": s.time_us,
        "host_time_us": s.host_busy_us,
        "device_busy_us": s.device_busy_us,
        "kernels": s.kernels,
        "launches": s.launches,
    }
