"""Time the training loop spends waiting for its DataLoader, per step.

The profiler wraps each `next()` on a DataLoader iterator in a
`enumerate(DataLoader)#<Iter>.__next__` range on the host. Waiting there is only
a problem when the device has nothing to do meanwhile, so each wait is paired
with the device busy time inside it.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..trace import Trace
from .intervals import clip, merge, union_length
from .steps import windows

DATALOADER_PREFIX = "enumerate(DataLoader)#"


@dataclass(frozen=True)
class DataWait:
    step: int | None  # ProfilerStep number, None for the whole-trace pseudo-step
    step_start: float
    step_dur: float
    wait_us: float  # host time inside __next__ ranges in the step
    device_busy_us: float  # device busy time overlapping those ranges
    longest: int  # event index of the longest __next__ range in the step (-1 if none)
    calls: int  # __next__ ranges in the step: batches fetched

    @property
    def share(self) -> float:
        """Fraction of the step spent inside DataLoader.__next__."""
        return self.wait_us / self.step_dur if self.step_dur > 0 else 0.0

    @property
    def device_idle_us(self) -> float:
        """Wait during which the device had nothing to run: what faster loading recovers."""
        return max(self.wait_us - self.device_busy_us, 0.0)


def next_events(trace: Trace) -> np.ndarray:
    """Indices of the DataLoader `__next__` ranges on host threads, in time order."""
    ids = trace.name_ids_matching(
        lambda n: n.startswith(DATALOADER_PREFIX) and n.endswith("__next__")
    )
    idx = np.flatnonzero(np.isin(trace.name_id, ids) & ~trace.is_instant & (trace.lane_kind == 1))
    return idx[np.argsort(trace.ts[idx], kind="stable")]


def data_waits(trace: Trace) -> list[DataWait]:
    """One `DataWait` per step (or for the whole trace); empty when no DataLoader was seen."""
    nxt = next_events(trace)
    if not len(nxt):
        return []
    work = np.flatnonzero(trace.device_work)
    busy_s, busy_e = merge(trace.ts[work], trace.end[work])
    out = []
    for number, _index, start, end in windows(trace):
        sel = nxt[(trace.ts[nxt] >= start) & (trace.ts[nxt] < end)]
        wait_s, wait_e = merge(trace.ts[sel], trace.end[sel])
        busy = sum(
            union_length(*clip(busy_s, busy_e, s, e)) for s, e in zip(wait_s, wait_e, strict=True)
        )
        longest = int(sel[np.argmax(trace.dur[sel])]) if len(sel) else -1
        out.append(
            DataWait(
                step=number,
                step_start=start,
                step_dur=end - start,
                wait_us=float((wait_e - wait_s).sum()),
                device_busy_us=float(busy),
                longest=longest,
                calls=len(sel),
            )
        )
    return out
