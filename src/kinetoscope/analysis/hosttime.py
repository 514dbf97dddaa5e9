"""Where each step's host (wall-clock) time goes: data wait, sync wait, compute, dispatch, the rest.

The step is a span of wall-clock time on the thread that called `prof.step()`
(the whole trace when it has no `ProfilerStep#N`). Each instant of it is
given to the first of these that is happening on any host thread (threads
merged, so the autograd thread's backward ops count while the main thread
waits for them):

1. data wait: inside a DataLoader `enumerate(DataLoader)#...__next__` range;
2. sync wait: inside a runtime call that waited for the device
   (`analysis.blocking`: synchronize calls, blocking copies, calls whose timing
   shows a wait), the profiler's final flush included when the window is the
   whole trace;
3. compute, on a trace without device work only: inside the self time of an
   op that runs the arithmetic itself (`analysis.cpu_compute`); with a
   device, an op's self time is its launch and this part is zero;
4. dispatch (+ launch on a device): inside any other op or runtime/driver
   call (the dispatcher, composite ops, the launch calls);
5. Python/other: none of these (Python between ops, annotations only, idle).

The five parts are disjoint and add up to the step. For dispatch and
Python/other the part during which no device work ran is kept too
(`*_exposed_us`): host work hidden under device execution costs nothing (the
device sets the pace then), host work while the device idles is what makes a
step host-bound. Device time here is real time (any device work running),
not the launch-attributed busy time of `analysis.steps`. Compilation time
(torch.compile's Dynamo/Inductor events) is measured beside them, not as a
fifth part: it overlaps the others (compilation runs Python and aten ops).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..trace import Cat, Trace
from .blocking import blocking_calls
from .compile import compile_events
from .cpu_compute import compute_intervals
from .dataloader import next_events
from .intervals import clip, merge, union_length
from .steps import host_activity_mask, windows

#: The parts in priority order, as (key, words); keys are `StepHostTime` fields.
PARTS = (
    ("data_wait_us", "data wait"),
    ("sync_wait_us", "sync wait"),
    ("compute_us", "compute"),
    ("dispatch_us", "dispatch + launch"),
    ("other_us", "Python/other"),
)


@dataclass(frozen=True)
class StepHostTime:
    step: int | None  # None for the whole-trace pseudo-step
    dur: float
    data_wait_us: float
    sync_wait_us: float
    compute_us: float  # math-op self time on a trace without device work (else 0)
    dispatch_us: float
    other_us: float
    dispatch_exposed_us: float  # dispatch while no device work ran
    other_exposed_us: float  # Python/other while no device work ran
    compile_us: float  # compilation inside the step (overlaps the four parts)


def host_time(trace: Trace) -> list[StepHostTime]:
    """One decomposition per step (or one for the whole trace)."""
    return trace.memo(_host_time)


def _host_time(trace: Trace) -> list[StepHostTime]:
    data = _merged(trace, next_events(trace))
    sync = _merged(trace, blocking_calls(trace))
    compute = compute_intervals(trace)
    busy = host_activity_mask(trace) & trace.mask(Cat.CPU_OP, Cat.RUNTIME, Cat.DRIVER)
    ops = _merged(trace, np.flatnonzero(busy))
    compiling = _merged(trace, compile_events(trace))
    device = _merged(trace, np.flatnonzero(trace.device_work))
    out = []
    for number, _index, start, end in windows(trace):
        d = _cut(data, start, end)
        ds = _join(d, _cut(sync, start, end))
        dsc = _join(ds, _cut(compute, start, end))
        dsp = _join(dsc, _cut(ops, start, end))
        covered = [union_length(*x) for x in (d, ds, dsc, dsp)]
        dev = _cut(device, start, end)
        dev_us = union_length(*dev)
        # |A & device| = |A| + |device| - |A | device|, within the step
        hidden = [
            c + dev_us - union_length(*_join(x, dev))
            for c, x in zip(covered, (d, ds, dsc, dsp), strict=True)
        ]
        dispatch_us = covered[3] - covered[2]
        other_us = max(end - start - covered[3], 0.0)
        out.append(
            StepHostTime(
                step=number,
                dur=end - start,
                data_wait_us=covered[0],
                sync_wait_us=covered[1] - covered[0],
                compute_us=covered[2] - covered[1],
                dispatch_us=dispatch_us,
                other_us=other_us,
                dispatch_exposed_us=max(dispatch_us - (hidden[3] - hidden[2]), 0.0),
                other_exposed_us=max(other_us - (dev_us - hidden[3]), 0.0),
                compile_us=union_length(*_cut(compiling, start, end)),
            )
        )
    return out


def _merged(trace: Trace, idx: np.ndarray):
    return merge(trace.ts[idx], trace.end[idx])


def _cut(merged, lo: float, hi: float):
    """Sorted disjoint intervals cut to [lo, hi] (only those that can overlap it)."""
    starts, ends = merged
    first = np.searchsorted(ends, lo, side="right")
    stop = np.searchsorted(starts, hi, side="left")
    return clip(starts[first:stop], ends[first:stop], lo, hi)


def _join(a, b):
    return np.concatenate((a[0], b[0])), np.concatenate((a[1], b[1]))
