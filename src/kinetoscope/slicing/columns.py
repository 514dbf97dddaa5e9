"""The few fields `slice` decides on, decoded per batch of events into numpy columns.

Deciding what to keep needs an event's phase, category, name (for
`ProfilerStep#N`), time span, flow id and correlation id. The batch is decoded
by the loader's own decoder (`trace.decode.EventStream.decode_events`): the same
types, the same repairs (control characters, unpaired surrogates, a value
nested too deep, integers past int64) and the same one-line refusals (bytes
that are not UTF-8, events of the wrong shape) as every other command.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from ..trace.categories import DEVICE_CATS, Cat, normalize_category
from ..trace.decode import EventStream
from ..trace.steps import STEP_RE
from .scan import Batch

#: flows whose id is the correlation id of a launch (Kineto's launch -> device arrows)
LAUNCH_FLOW_CATS = frozenset({"ac2g", "async"})
_TIMED_PH = frozenset({"X", "i", "I"})  # the events whose ts the loader keeps
_FLOW_PH = {"s": 1, "f": 2, "t": 3}
_INT64 = 1 << 63

# event kinds
OTHER, METADATA, LAUNCH, DEVICE, FLOW, DROPPED = range(6)


@dataclass
class Columns:
    """One value per event of a batch."""

    kind: np.ndarray  # OTHER, METADATA, LAUNCH, DEVICE, FLOW, DROPPED
    ts: np.ndarray  # float64, NaN when absent
    end: np.ndarray  # ts + dur (ts when no dur)
    timed: np.ndarray  # bool: X/i/I events, the loader's timestamps
    corr: np.ndarray  # int64 correlation id, -1 when absent
    flow_key: np.ndarray  # int64 key of (cat, id) for flow events, 0 otherwise
    flow_phase: np.ndarray  # int8: 1 s, 2 f, 3 t, 0 not a flow
    launch_flow: np.ndarray  # bool: a launch -> device flow (id is a correlation id)
    step: np.ndarray  # int64 N of ProfilerStep#N, -1 otherwise
    host_step: np.ndarray  # bool: ProfilerStep#N on a host lane (not gpu_user_annotation)


class Classifier:
    """Decodes batches into `Columns`; categories in `drop` become DROPPED."""

    def __init__(self, stream: EventStream, drop: frozenset[str] = frozenset()) -> None:
        self.stream = stream  # the loader's decoder (its warnings are the slice's)
        self.drop = drop
        self._cat_kind: dict[Any, int] = {}

    def columns(self, batch: Batch) -> Columns:
        events = self.stream.decode_events(
            b"[" + batch.data[batch.starts[0] : batch.ends[-1]] + b"]"
        )
        n = len(events)
        phs = [e.ph for e in events]
        cats = [e.cat for e in events]
        kind = np.fromiter((self._kind(c) for c in cats), np.int8, n)
        phase = np.fromiter((_FLOW_PH.get(p, 0) for p in phs), np.int8, n)
        kind[(phase > 0) & (kind != DROPPED)] = FLOW
        kind[np.fromiter((p == "M" for p in phs), bool, n)] = METADATA
        ts = np.fromiter((e.ts for e in events), np.float64, n)
        end = ts + np.fromiter((e.dur for e in events), np.float64, n)
        end = np.where(np.isnan(end), ts, end)
        corr = np.fromiter((_int(e.args.correlation) for e in events), np.int64, n)
        flow_key = np.zeros(n, np.int64)
        launch_flow = np.zeros(n, bool)
        for i in np.flatnonzero(kind == FLOW).tolist():
            e = events[i]
            flow_key[i] = hash((e.cat, e.id)) or 1
            if e.cat in LAUNCH_FLOW_CATS:
                launch_flow[i] = True
                corr[i] = _int(e.id)
        step = np.full(n, -1, np.int64)
        host_step = np.zeros(n, bool)
        for i, e in enumerate(events):
            name = e.name
            if phs[i] == "M" or not name.startswith("ProfilerStep#"):
                continue
            if m := STEP_RE.match(name):
                step[i] = int(m.group(1))
                host_step[i] = normalize_category(cats[i], name) != Cat.GPU_ANNOTATION
        timed = np.fromiter((p in _TIMED_PH for p in phs), bool, n) & ~np.isnan(ts)
        return Columns(kind, ts, end, timed, corr, flow_key, phase, launch_flow, step, host_step)

    def _kind(self, cat: Any) -> int:
        kind = self._cat_kind.get(cat)
        if kind is None:
            if cat in self.drop:
                kind = DROPPED
            else:
                norm = normalize_category(cat, "")
                if norm in (Cat.RUNTIME, Cat.DRIVER):
                    kind = LAUNCH
                elif norm in DEVICE_CATS:
                    kind = DEVICE
                else:
                    kind = OTHER
            self._cat_kind[cat] = kind
        return kind


def _int(value: Any) -> int:
    """A correlation or flow id as a non-negative int, -1 when it is not one."""
    if value.__class__ is str and len(value) < 20 and value.isascii() and value.isdigit():
        value = int(value)
    return value if value.__class__ is int and 0 <= value < _INT64 else -1
