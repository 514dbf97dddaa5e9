"""What one run does per step: kernels grouped by identity, host ops by name.

Only work inside the profiled steps counts (device work by the step its launch
call falls in, host ops by their start), so a warm-up op before the first
`ProfilerStep` does not look like a change. Traces without steps count the
whole window as one step.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from ..analysis.steps import device_anchor
from ..analysis.window import in_window
from ..trace import Cat, Trace
from ..trace.steps import STEP_RE

#: Host events compared between runs: ops, annotations, runtime and driver calls
#: (Python frames are left out: `with_stack` in one run only would swamp the diff).
HOST_OP_CATS = (Cat.CPU_OP, Cat.USER_ANNOTATION, Cat.RUNTIME, Cat.DRIVER)


@dataclass(frozen=True)
class KernelGroup:
    """Kernels that share an identity (same decoded name) in one run."""

    key: str
    display: str
    calls: int
    total_us: float
    example: str  # one raw kernel name of the group


@dataclass(frozen=True)
class OpGroup:
    """Host events of one name in one run (the key_averages row, restricted to steps)."""

    name: str
    calls: int
    self_us: float
    total_us: float


Identify = Callable[[Trace, str], tuple[str, str]]


def kernel_groups(trace: Trace, identify: Identify) -> dict[str, KernelGroup]:
    """Kernels per identity; `identify(trace, raw name) -> (match key, display name)` (the
    trace keeps what it decodes of its names, `Trace.memo`)."""
    idx = np.flatnonzero(trace.mask(Cat.KERNEL) & (trace.lane_kind == 2))
    idx = idx[in_window(trace, device_anchor(trace)[idx])]
    calls = np.bincount(trace.name_id[idx], minlength=len(trace.names))
    spent = np.bincount(trace.name_id[idx], weights=trace.dur[idx], minlength=len(trace.names))
    groups: dict[str, KernelGroup] = {}
    for name_id in np.flatnonzero(calls):
        raw = trace.names[name_id]
        key, display = identify(trace, raw)
        old = groups.get(key)
        groups[key] = KernelGroup(
            key,
            display,
            int(calls[name_id]) + (old.calls if old else 0),
            float(spent[name_id]) + (old.total_us if old else 0.0),
            old.example if old else raw,
        )
    return groups


def op_groups(trace: Trace) -> dict[str, OpGroup]:
    """Host ops, annotations and runtime calls per name: calls, self and total CPU time."""
    step_ids = trace.name_ids_matching(lambda n: bool(STEP_RE.match(n)))
    mask = (
        trace.mask(*HOST_OP_CATS)
        & (trace.lane_kind == 1)
        & ~trace.is_instant
        & ~np.isin(trace.name_id, step_ids)
    )
    idx = np.flatnonzero(mask)
    idx = idx[in_window(trace, trace.ts[idx])]
    n = len(trace.names)
    ids = trace.name_id[idx]
    calls = np.bincount(ids, minlength=n)
    self_us = np.bincount(ids, weights=trace.self_time[idx], minlength=n)
    total_us = np.bincount(ids, weights=trace.dur[idx], minlength=n)
    groups = {}
    for i in np.flatnonzero(calls):
        name = trace.names[i]
        groups[name] = OpGroup(name, int(calls[i]), float(self_us[i]), float(total_us[i]))
    return groups
