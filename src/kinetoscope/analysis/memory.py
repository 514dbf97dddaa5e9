"""Allocator activity from `[memory]` instants (recorded with profile_memory=True).

Each instant is one allocation (positive bytes) or free (negative) on one
device, with the allocator's running totals after it. Older traces leave the
totals at -1 for CPU memory; there the timeline is rebuilt as the running sum
of the bytes, so it is relative to the start of recording (`relative=True`).
The op behind an allocation is the innermost host op or annotation enclosing
the instant on its thread: that is the op that asked for the memory.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ..trace import Cat, Trace
from .stepmap import step_of

DEVICE_TYPES = {0: "cpu", 1: "cuda"}


@dataclass(frozen=True)
class Allocation:
    event: int  # index of the [memory] instant in the trace
    ts: float
    nbytes: int
    op: int  # innermost enclosing host op (-1 if none)
    step: int | None


@dataclass
class StepChurn:
    step: int
    allocated_bytes: int  # sum of allocations in the step
    freed_bytes: int  # sum of frees (positive number)
    net_bytes: int
    peak_bytes: float  # highest allocated level inside the step
    reserved_grown_bytes: int  # reserved memory the allocator took from the driver
    reserved_released_bytes: int  # reserved memory it handed back (empty_cache, OOM retry)


@dataclass
class DeviceMemory:
    """The allocator timeline of one device."""

    device: str  # e.g. "cuda:0", "cpu"
    ts: np.ndarray  # instants, time order
    allocated: np.ndarray  # bytes allocated after each instant
    reserved: np.ndarray | None  # bytes reserved by the caching allocator (None if absent)
    relative: bool  # allocated rebuilt from a running sum (no totals in the trace)
    peak_bytes: float
    peak: Allocation  # the instant at which the peak was reached
    largest: list[Allocation] = field(default_factory=list)
    churn: list[StepChurn] = field(default_factory=list)

    @property
    def events(self) -> int:
        return len(self.ts)


def memory_timeline(trace: Trace, top: int = 10) -> list[DeviceMemory]:
    """Per device: allocated/reserved over time, peak and the op at it, largest allocations."""
    mem = trace.memory
    if not len(mem):
        return []
    out = []
    keys = sorted(set(zip(mem.device_type.tolist(), mem.device_id.tolist(), strict=True)))
    for dtype, did in keys:
        sel = np.flatnonzero((mem.device_type == dtype) & (mem.device_id == did))
        sel = sel[np.argsort(mem.ts[sel], kind="stable")]
        nbytes = mem.nbytes[sel].astype(np.int64)
        totals = mem.total_allocated[sel].astype(np.float64)
        relative = bool((totals < 0).all())
        allocated = np.cumsum(nbytes).astype(np.float64) if relative else np.maximum(totals, 0)
        reserved_raw = mem.total_reserved[sel].astype(np.float64)
        # the CPU allocator keeps no cache: its "reserved" is always 0, leave it out
        no_reserve = (reserved_raw < 0).all() or DEVICE_TYPES.get(int(dtype)) == "cpu"
        reserved = None if no_reserve else np.maximum(reserved_raw, 0)
        k = int(np.argmax(allocated))
        alloc_order = np.argsort(-nbytes, kind="stable")
        largest = [int(j) for j in alloc_order[:top] if nbytes[j] > 0]
        ts = mem.ts[sel].astype(np.float64)
        device = DEVICE_TYPES.get(int(dtype), f"type{dtype}")
        if did >= 0 and device != "cpu":
            device = f"{device}:{did}"
        out.append(
            DeviceMemory(
                device=device,
                ts=ts,
                allocated=allocated,
                reserved=reserved,
                relative=relative,
                peak_bytes=float(allocated[k]),
                peak=_allocation(trace, int(mem.index[sel[k]]), float(ts[k]), int(nbytes[k])),
                largest=[
                    _allocation(trace, int(mem.index[sel[j]]), float(ts[j]), int(nbytes[j]))
                    for j in largest
                ],
                churn=_churn(trace, ts, nbytes, allocated, reserved),
            )
        )
    return out


def enclosing_op(trace: Trace, event: int) -> int:
    """Innermost cpu_op / user annotation on the event's thread that contains its time."""
    ts = trace.ts[event]
    cand = np.flatnonzero(
        (trace.lane == trace.lane[event])
        & np.isin(trace.cat, np.array([int(Cat.CPU_OP), int(Cat.USER_ANNOTATION)], np.uint8))
        & ~trace.is_instant
        & (trace.ts <= ts)
        & (trace.end >= ts)
    )
    if not len(cand):
        return -1
    # innermost: latest start, then shortest
    return int(cand[np.lexsort((trace.dur[cand], -trace.ts[cand]))[0]])


def op_label(trace: Trace, op: int) -> str:
    """`aten::empty in aten::conv2d`: the op and the nearest enclosing op, for evidence."""
    if op < 0:
        return "(no enclosing op)"
    name = trace.name(op)
    parent = int(trace.parent[op])
    while parent >= 0 and trace.cat[parent] not in (int(Cat.CPU_OP), int(Cat.USER_ANNOTATION)):
        parent = int(trace.parent[parent])
    return f"{name} in {trace.name(parent)}" if parent >= 0 else name


def _allocation(trace: Trace, event: int, ts: float, nbytes: int) -> Allocation:
    return Allocation(event, ts, nbytes, enclosing_op(trace, event), step_of(trace, ts))


def _churn(trace, ts, nbytes, allocated, reserved) -> list[StepChurn]:
    out = []
    for s in trace.steps:
        sel = (ts >= s.start) & (ts < s.end)
        if not sel.any():
            continue
        b = nbytes[sel]
        steps_r = np.diff(reserved[sel]) if reserved is not None else np.zeros(0)
        out.append(
            StepChurn(
                step=s.number,
                allocated_bytes=int(b[b > 0].sum()),
                freed_bytes=int(-b[b < 0].sum()),
                net_bytes=int(b.sum()),
                peak_bytes=float(allocated[sel].max()),
                reserved_grown_bytes=int(steps_r[steps_r > 0].sum()),
                reserved_released_bytes=int(-steps_r[steps_r < 0].sum()),
            )
        )
    return out
