"""What one worker measures on one rank's trace, and sends back.

`summarize_rank` runs inside a worker process (pool, Dask or Ray): it loads the
trace, measures step times and collective time and overlap, runs the
rules, and returns a `RankSummary` of numbers and finding dicts, small and
picklable, so no arrays cross process boundaries.

The figures a single-trace `explain` also shows come from the same place: step
times and device busy time from `analysis.stats`, collective kernels from
`analysis.kernel_types`, both over the active window (`analysis.window`: the work
the profiled steps launched; the whole trace without `ProfilerStep#N`). A rank's
row in `explain DIR` then reads as `explain FILE` on that rank's file, and
collective time never counts work that device busy time leaves out.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from statistics import median
from typing import Any

import numpy as np

from ..analysis.collectives import collectives
from ..analysis.intervals import merge, union_length
from ..analysis.kernel_types import KERNEL_TYPES, type_codes
from ..analysis.llm import llm_view
from ..analysis.stats import trace_stats
from ..analysis.streams import stream_report
from ..analysis.window import window_kernels
from ..errors import TraceError
from ..trace import Trace, load

_COMMUNICATION = KERNEL_TYPES.index("communication")


def collective_kernels(trace: Trace) -> np.ndarray:
    """Kernels launched in the window that move data between ranks, by the classifier
    kernel types and streams use (NCCL/RCCL, DeepEP, NVSHMEM, custom all-reduce, MoE
    all-to-all...)."""
    kernels = window_kernels(trace)
    return kernels[type_codes(trace, kernels) == _COMMUNICATION]


@dataclass
class RankSummary:
    """What one worker process sends back: numbers and finding dicts, no arrays."""

    path: str
    rank: int | None  # from distributedInfo; None when the trace has none
    steps: list[tuple[int, float]]  # (ProfilerStep number, duration us)
    #: median step duration (the whole trace without steps): `analysis.stats` step_time_us
    step_us: float
    #: device work the steps launched, summed over the steps: `analysis.stats` device_busy_us
    device_busy_us: float
    collective_us: float  # union of the collective kernels launched in the window
    compute_us: float  # union of the other kernels launched in the window
    overlapped_us: float  # collective time covered by compute kernels on other streams
    collective_kernels: int
    collectives: list[tuple[str, float]] = field(default_factory=list)  # (name, dur) in order
    findings: list[dict[str, Any]] = field(default_factory=list)
    not_checked: list[dict[str, str]] = field(default_factory=list)
    error: str | None = None
    #: median over steps of communication no compute overlapped (analysis.streams)
    exposed_us: float = 0.0
    #: LLM passes (analysis.llm), (phase, start us, dur us, device busy us, graph launches)
    llm_passes: list[tuple[str, float, float, float, int]] = field(default_factory=list)
    #: distributedInfo.world_size (None when the trace has none)
    world_size: int | None = None
    #: the window's collectives (analysis.collectives), one tuple a call: (family, kind,
    #: process group or None, step number or -1, start us on the trace's clock, dur us);
    #: matched across ranks by ranks/skew.py
    calls: list[tuple[str, str, str | None, int, float, float]] = field(default_factory=list)
    #: whether the file writes baseTimeNanoseconds (then its `ts` count from that base,
    #: and `calls`' starts have it added back: the epoch clock every rank writes)
    has_base_time: bool = False

    @property
    def collective_share(self) -> float:
        return self.collective_us / self.device_busy_us if self.device_busy_us > 0 else 0.0

    @property
    def overlap(self) -> float | None:
        return self.overlapped_us / self.collective_us if self.collective_us > 0 else None


def collective_overlap(trace: Trace) -> tuple[float, float, float, int]:
    """(collective us, compute us, collective us overlapped by compute on other streams, count)
    over the kernels launched in the window (`analysis.window`), the work device busy counts."""
    kernels = window_kernels(trace)
    is_coll = type_codes(trace, kernels) == _COMMUNICATION
    coll, comp = kernels[is_coll], kernels[~is_coll]
    overlapped = 0.0
    for lane in np.unique(trace.lane[coll]):
        mine = coll[trace.lane[coll] == lane]
        others = comp[trace.lane[comp] != lane]
        cs, ce = merge(trace.ts[mine], trace.end[mine])
        ks, ke = merge(trace.ts[others], trace.end[others])
        overlapped += _intersection(cs, ce, ks, ke)
    return (
        union_length(trace.ts[coll], trace.end[coll]),
        union_length(trace.ts[comp], trace.end[comp]),
        overlapped,
        int(len(coll)),
    )


def collective_sequence(trace: Trace) -> list[tuple[str, float]]:
    """Collective kernels of the window in launch order: the k-th on every rank is the same
    collective."""
    return [(trace.name(i), float(trace.dur[i])) for i in collective_kernels(trace).tolist()]


def _intersection(a_s, a_e, b_s, b_e) -> float:
    """Total length of the intersection of two sorted disjoint interval lists."""
    total, i, j = 0.0, 0, 0
    while i < len(a_s) and j < len(b_s):
        lo, hi = max(a_s[i], b_s[j]), min(a_e[i], b_e[j])
        if hi > lo:
            total += hi - lo
        if a_e[i] < b_e[j]:
            i += 1
        else:
            j += 1
    return float(total)


def _world_size(distributed: dict | None) -> int | None:
    size = (distributed or {}).get("world_size")
    return size if isinstance(size, int) and not isinstance(size, bool) else None


def summarize_rank(path: str, config: dict | None = None) -> RankSummary:
    """Load one rank's trace and measure it (runs inside a worker process)."""
    from ..rules.engine import run_rules

    try:
        trace = load(path)
    except TraceError as exc:  # exceptions with custom __init__ do not pickle back
        return RankSummary(path, None, [], 0.0, 0.0, 0.0, 0.0, 0.0, 0, error=exc.problem)
    stats = trace_stats(trace)
    coll, comp, overlapped, count = collective_overlap(trace)
    outcome = run_rules(trace, config=config, share=False)  # one worker per rank already
    return RankSummary(
        path=path,
        rank=trace.meta.rank,
        world_size=_world_size(trace.meta.distributed),
        steps=[(s.number, s.dur) for s in stats.steps] if stats.has_steps else [],
        step_us=stats.spreads["step_time_us"].median,
        device_busy_us=stats.device_busy_us,
        collective_us=coll,
        compute_us=comp,
        overlapped_us=overlapped,
        collective_kernels=count,
        collectives=collective_sequence(trace),
        findings=[f.to_dict() for f in outcome.findings],
        not_checked=[s.to_dict() for s in outcome.not_checked],
        exposed_us=median([s.exposed_us for s in stream_report(trace).steps] or [0.0]),
        llm_passes=_llm_passes(trace),
        calls=_calls(trace),
        has_base_time=trace.meta.base_time_ns is not None,
    )


def _calls(trace: Trace) -> list[tuple[str, str, str | None, int, float, float]]:
    """The window's collectives in time order, starts on the epoch clock: Kineto writes
    `ts` as epoch microseconds, or relative to `baseTimeNanoseconds` where it writes one."""
    base = (trace.meta.base_time_ns or 0) / 1e3
    calls = sorted(collectives(trace).calls, key=lambda c: c.start)
    return [(c.family, c.kind, c.group, c.step, c.start + base, c.dur_us) for c in calls]


def _llm_passes(trace: Trace) -> list[tuple[str, float, float, float, int]]:
    view = llm_view(trace)
    if view is None:
        return []
    return [
        (p.phase, trace.rel(p.start), p.dur, p.device_busy_us, p.graph_launches)
        for p in view.passes
    ]
