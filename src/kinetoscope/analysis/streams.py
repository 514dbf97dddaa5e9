"""Device streams and communication/compute overlap.

Work on one stream runs in order; work on different streams may run at once.
Distributed training relies on that: collectives (NCCL/RCCL, DeepEP, custom
all-reduce: the communication type of `kernel_types`) run on their own
stream so that gradients of one layer are reduced while the backward pass of
the next is still computing. Communication that runs while no compute kernel
runs on any stream is exposed: the step waits for it (or for the slowest
rank, since a collective kernel spins until its peers arrive). This module
measures, per stream, busy time, and per step, how much communication time
was hidden under compute and how much was exposed.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..trace import Trace
from .intervals import clip_merged, merge, union_length
from .kernel_types import KERNEL_TYPES, type_codes
from .stepmap import device_steps
from .steps import step_stats
from .window import window_device_work

#: Device work that moves data between ranks/devices: collective kernels and peer copies.
COMMUNICATION_TYPES = frozenset({"communication", "memcpy PtoP"})


@dataclass(frozen=True)
class StreamRow:
    device: int | None
    stream: int | None
    label: str
    events: int
    #: union of this stream's device work in the window
    busy_us: float
    #: part of busy_us spent in communication kernels and peer copies
    communication_us: float


@dataclass(frozen=True)
class StepOverlap:
    step: int | None
    #: the step's host window, or the span of the device work it launched when the
    #: device runs behind the host and takes longer (the step lasts until its work ends)
    step_us: float
    communication_us: float
    hidden_us: float

    @property
    def exposed_us(self) -> float:
        return self.communication_us - self.hidden_us

    @property
    def exposed_share(self) -> float:
        """Exposed communication as a share of the step."""
        return self.exposed_us / self.step_us if self.step_us > 0 else 0.0


@dataclass(frozen=True)
class StreamReport:
    streams: list[StreamRow]
    #: union of all communication in the window, and the part under compute on any stream
    communication_us: float
    hidden_us: float
    steps: list[StepOverlap]

    @property
    def exposed_us(self) -> float:
        return self.communication_us - self.hidden_us

    @property
    def hidden_share(self) -> float | None:
        """Share of communication time hidden under compute; None without communication."""
        return self.hidden_us / self.communication_us if self.communication_us > 0 else None

    @property
    def has_communication(self) -> bool:
        return self.communication_us > 0


def _overlap_us(a_s, a_e, b_s, b_e) -> float:
    """Length of the intersection of two unions of intervals."""
    a_s, a_e = merge(a_s, a_e)
    b_s, b_e = merge(b_s, b_e)
    if not len(a_s) or not len(b_s):
        return 0.0
    # |A and B| = |A| + |B| - |A or B|
    both = union_length(np.concatenate((a_s, b_s)), np.concatenate((a_e, b_e)))
    return float((a_e - a_s).sum() + (b_e - b_s).sum() - both)


def _compute_unions(starts, ends, is_comm, device) -> dict[int, tuple[np.ndarray, np.ndarray]]:
    """Each device's compute as merged intervals, built once for every step's overlap."""
    out = {}
    for dev in np.unique(device[~is_comm]).tolist():
        comp = ~is_comm & (device == dev)
        out[dev] = merge(starts[comp], ends[comp])
    return out


def _hidden_in(starts, ends, device, comm, compute) -> float:
    """Communication among the events `comm` (indices: one step's, or the window's) that
    runs while compute runs on the same device. The device's compute is merged once
    (`compute`) and cut to the span of that communication, so a step costs its own
    events, not the window's (steps x events on a 2,045-step trace)."""
    total = 0.0
    for dev in np.unique(device[comm]).tolist():
        mine = comm[device[comm] == dev]
        a_s, a_e = merge(starts[mine], ends[mine])
        if dev not in compute or not len(a_s):
            continue
        b_s, b_e = clip_merged(*compute[dev], float(a_s[0]), float(a_e[-1]))
        total += _overlap_us(a_s, a_e, b_s, b_e)
    return total


def _lane_devices(trace: Trace) -> np.ndarray:
    """Device of each lane (-1 where none), for one lookup per lane rather than per event."""
    return np.array(
        [-1 if lane.device is None else lane.device for lane in trace.lanes] or [-1],
        dtype=np.int64,
    )


def compute_unions(trace: Trace) -> dict[int, tuple[np.ndarray, np.ndarray]]:
    """Each device's compute in the window (device work that is not communication) as
    merged intervals: what `hidden_in` measures communication against."""
    work = window_device_work(trace)
    is_comm = np.isin(
        type_codes(trace, work), [KERNEL_TYPES.index(t) for t in sorted(COMMUNICATION_TYPES)]
    )
    device = _lane_devices(trace)[trace.lane[work]]
    return _compute_unions(trace.ts[work], trace.end[work], is_comm, device)


def hidden_in(trace: Trace, indices: np.ndarray, compute) -> float:
    """Time of the device events `indices` (one family's collectives) that runs while
    compute (`compute_unions`) runs on the same device."""
    device = _lane_devices(trace)[trace.lane[indices]]
    return _hidden_in(
        trace.ts[indices], trace.end[indices], device, np.arange(len(indices)), compute
    )


def stream_report(trace: Trace) -> StreamReport:
    """Busy time per stream and communication overlap, over the active window."""
    work = window_device_work(trace)
    is_comm = np.isin(
        type_codes(trace, work), [KERNEL_TYPES.index(t) for t in sorted(COMMUNICATION_TYPES)]
    )
    starts, ends = trace.ts[work], trace.end[work]
    rows = []
    for lane_id in np.unique(trace.lane[work]).tolist():
        lane = trace.lanes[lane_id]
        here = trace.lane[work] == lane_id
        rows.append(
            StreamRow(
                device=lane.device,
                stream=lane.stream,
                label=lane.label,
                events=int(here.sum()),
                busy_us=union_length(starts[here], ends[here]),
                communication_us=union_length(starts[here & is_comm], ends[here & is_comm]),
            )
        )
    rows.sort(key=lambda r: -r.busy_us)
    device = _lane_devices(trace)[trace.lane[work]]  # one lookup per lane, not per event
    numbers = device_steps(trace, work) if trace.steps else np.full(len(work), -1)
    # each step's work is one slice of the events ordered by step (a mask per step was
    # steps x events), in event order within it as the mask gave them
    by_step = np.argsort(numbers, kind="stable")
    sorted_numbers = numbers[by_step]
    del numbers  # its sorted copy is all the loop reads (5 GB: 10 M device events)
    if len(by_step) < 2**31:
        by_step = by_step.astype(np.int32)
    compute = _compute_unions(starts, ends, is_comm, device) if is_comm.any() else {}
    steps = []
    for st in step_stats(trace):
        if st.number is None:
            launched = np.arange(len(work))
        else:
            first = np.searchsorted(sorted_numbers, st.number, side="left")
            stop = np.searchsorted(sorted_numbers, st.number, side="right")
            launched = by_step[first:stop]
        mine = launched[is_comm[launched]]
        span = float(ends[launched].max() - starts[launched].min()) if len(launched) else 0.0
        steps.append(
            StepOverlap(
                step=st.number,
                step_us=max(st.dur, span),
                communication_us=union_length(starts[mine], ends[mine]),
                hidden_us=_hidden_in(starts, ends, device, mine, compute),
            )
        )
    return StreamReport(
        rows,
        union_length(starts[is_comm], ends[is_comm]),
        _hidden_in(starts, ends, device, np.flatnonzero(is_comm), compute),
        steps,
    )
