"""Which `ProfilerStep#N` a timestamp falls in: evidence names the step, rules group by it."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..trace import Trace
from .steps import StepStats, device_anchor, step_stats


def step_numbers(trace: Trace, ts: np.ndarray) -> np.ndarray:
    """Step number containing each host timestamp, -1 outside every step (or no steps)."""
    ts = np.asarray(ts, dtype=np.float64)
    out = np.full(len(ts), -1, dtype=np.int64)
    steps = sorted(trace.steps, key=lambda s: s.start)
    if not steps or not len(ts):
        return out
    starts = np.array([s.start for s in steps])
    ends = np.array([s.end for s in steps])
    numbers = np.array([s.number for s in steps], dtype=np.int64)
    pos = np.searchsorted(starts, ts, side="right") - 1
    ok = pos >= 0
    inside = np.zeros(len(ts), dtype=bool)
    inside[ok] = ts[ok] < ends[pos[ok]]
    out[inside] = numbers[pos[inside]]
    return out


def device_steps(trace: Trace, indices: np.ndarray) -> np.ndarray:
    """Step of device events, placed by the launch call that enqueued them (as step_stats does)."""
    return step_numbers(trace, device_anchor(trace)[indices])


def step_of(trace: Trace, ts: float) -> int | None:
    """The step one host timestamp falls in, None outside every step."""
    return step_or_none(int(step_numbers(trace, np.array([ts]))[0]))


def step_or_none(value: int) -> int | None:
    return None if value < 0 else int(value)


def step_count(trace: Trace) -> int:
    """Steps in the trace, 1 without ProfilerSteps: the divisor of every per-step impact."""
    return max(len(trace.steps), 1)


def mean_step_us(trace: Trace) -> float:
    """Mean step duration (the whole trace without steps): no per-step impact can exceed it."""
    if trace.steps:
        return float(np.mean([s.dur for s in trace.steps]))
    return trace.end_time - trace.start_time


@dataclass(frozen=True)
class StepCost:
    """Some host events' cost inside one step: how many start there, their summed duration."""

    step: StepStats
    calls: int
    us: float


def host_cost_by_step(trace: Trace, indices: np.ndarray) -> list[StepCost]:
    """Per step with host activity (the whole trace without steps), the host events
    `indices` that start in it: the per-step table behind "N calls cost X per step"."""
    where = step_numbers(trace, trace.ts[indices])
    out = []
    for st in step_stats(trace):
        if st.host_busy_us <= 0:
            continue
        sel = indices[where == (-1 if st.number is None else st.number)]
        out.append(StepCost(st, len(sel), float(trace.dur[sel].sum())))
    return out
