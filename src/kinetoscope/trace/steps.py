"""`ProfilerStep#N` windows: the unit every per-step number is computed on."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Protocol

import numpy as np

from .categories import Cat

#: at most 18 digits: every such number fits the int64 columns steps are kept in
#: (10**18 < 2**63); a longer one is no step the profiler counted
STEP_RE = re.compile(r"^ProfilerStep#(\d{1,18})$")
_LONG_STEP_RE = re.compile(r"^ProfilerStep#\d{19,}$")


@dataclass(frozen=True)
class Step:
    """One `ProfilerStep#N` window on the host, and its device-side copy if recorded."""

    number: int
    index: int
    start: float
    end: float
    device_start: float | None = None
    device_end: float | None = None

    @property
    def dur(self) -> float:
        return self.end - self.start


class StepColumns(Protocol):
    """The columns of a `Trace` that step finding reads (the Trace computes its steps
    by calling `find_steps(self)`, so this module names only what it needs)."""

    names: list[str]
    name_id: np.ndarray
    is_instant: np.ndarray
    lane_kind: np.ndarray
    cat: np.ndarray
    ts: np.ndarray
    dur: np.ndarray


def long_step_warning(names: list[str]) -> str | None:
    """The load warning for `ProfilerStep#N` names whose N is too long to be a
    step number (they are read as plain annotations), or None."""
    long = sum(1 for n in names if n.startswith("ProfilerStep#") and _LONG_STEP_RE.match(n))
    if not long:
        return None
    return (
        f"{long} ProfilerStep#N name(s) with a step number of 19 or more digits "
        "were not read as steps"
    )


def find_steps(trace: StepColumns) -> list[Step]:
    """Host step windows in time order, each paired with its device-side copy.

    The `gpu_user_annotation` event of the same name is the device's view of
    the step: from the first to the last device activity it contains.
    """
    step_ids = {i: int(m.group(1)) for i, n in enumerate(trace.names) if (m := STEP_RE.match(n))}
    if not step_ids:
        return []
    ids = np.array(list(step_ids), dtype=np.int32)
    is_step = np.isin(trace.name_id, ids) & ~trace.is_instant
    host = np.flatnonzero(is_step & (trace.lane_kind == 1))
    device = np.flatnonzero(is_step & (trace.cat == int(Cat.GPU_ANNOTATION)))
    device_by_number: dict[int, tuple[float, float]] = {}
    for i in device:
        number = step_ids[int(trace.name_id[i])]
        start, end = float(trace.ts[i]), float(trace.ts[i] + trace.dur[i])
        if number in device_by_number:
            prev = device_by_number[number]
            start, end = min(start, prev[0]), max(end, prev[1])
        device_by_number[number] = (start, end)
    steps = []
    seen: set[int] = set()
    for i in host[np.argsort(trace.ts[host], kind="stable")]:
        number = step_ids[int(trace.name_id[i])]
        if number in seen:  # duplicated event (e.g. re-exported trace): keep the first
            continue
        seen.add(number)
        dev = device_by_number.get(number)
        steps.append(
            Step(
                number=number,
                index=int(i),
                start=float(trace.ts[i]),
                end=float(trace.ts[i] + trace.dur[i]),
                device_start=dev[0] if dev else None,
                device_end=dev[1] if dev else None,
            )
        )
    return steps
