"""A trace's events as their own bytes plus the few fields the hand-off decides on.

The hand-off copies every event (nothing is dropped) and rewrites only the few it moves
or clamps, so it keeps each event's bytes and decodes the fields that decide with the
loader's own decoder (`EventStream.decode_events`: the same repairs and refusals as
`explain`), in the slicer's batches (`slicing.scan`). Memory grows with the events: the
output is sorted by time, so every event is held once.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import msgspec
import numpy as np

from ..errors import TraceError, input_name
from ..slicing.scan import EventScanner, ScanError
from ..trace.categories import DEVICE_CATS, Cat, normalize_category
from ..trace.decode import EventStream
from ..trace.source import trace_chunks

OTHER, LAUNCH, DEVICE = 0, 1, 2


class _Times(msgspec.Struct, gc=False):
    """ts and dur as written: Perfetto reads a JSON integer exactly, a fraction through a
    double (`layout.to_ns`), so which one it was decides how it nests."""

    ts: Any = None
    dur: Any = None


_TIMES = msgspec.json.Decoder(list[_Times])
_LAUNCH_CATS = frozenset({Cat.RUNTIME, Cat.DRIVER})


@dataclass
class Events:
    """Event k: `raw[k]` bytes, phase, pid, tid, ts/dur (us, NaN/0 when absent)."""

    top: bytes
    raw: list[bytes] = field(default_factory=list)
    ph: list[str] = field(default_factory=list)
    pid: list = field(default_factory=list)
    tid: list = field(default_factory=list)
    ts: list[float] = field(default_factory=list)
    dur: list[float] = field(default_factory=list)
    kind: list[int] = field(default_factory=list)  # OTHER, LAUNCH, DEVICE
    corr: list[int] = field(default_factory=list)  # args.correlation, -1 when absent
    meta_name: list = field(default_factory=list)  # args.name (thread_name metadata)
    name: list[str] = field(default_factory=list)
    ts_int: list[bool] = field(default_factory=list)  # ts was a JSON integer
    dur_int: list[bool] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    deep: bool = False  # values nested too deep were dropped by the decoder

    def arrays(self) -> tuple[np.ndarray, np.ndarray]:
        return np.asarray(self.ts, np.float64), np.asarray(self.dur, np.float64)

    def exact(self) -> tuple[np.ndarray, np.ndarray]:
        """Which ts and dur values were JSON integers (`layout.to_ns`)."""
        return np.asarray(self.ts_int, bool), np.asarray(self.dur_int, bool)


def read_events(path: Path) -> Events:
    warnings: list[str] = []
    stream = EventStream(input_name(path), warnings)
    scanner = EventScanner()
    out = Events(top=b"", warnings=warnings)
    kinds: dict = {}
    try:
        for piece in trace_chunks(path, warnings):
            if (batch := scanner.feed(piece)) is not None:
                _add(out, batch, stream, kinds)
        if (batch := scanner.finish()) is not None:
            _add(out, batch, stream, kinds)
    except ScanError as exc:
        raise TraceError(path, f"not a Kineto trace: {exc}") from None
    out.top = bytes(scanner.top)
    out.deep = "deep" in stream.repairs
    return out


def _add(out: Events, batch, stream: EventStream, kinds: dict) -> None:
    text = b"[" + batch.data[batch.starts[0] : batch.ends[-1]] + b"]"
    events = stream.decode_events(text)
    try:
        times = _TIMES.decode(text)
    except (msgspec.DecodeError, UnicodeDecodeError, RecursionError):  # repaired text
        times = [_Times()] * len(events)
    for t in times if len(times) == len(events) else [_Times()] * len(events):
        out.ts_int.append(type(t.ts) is int)
        out.dur_int.append(type(t.dur) is int)
    data, starts, ends = batch.data, batch.starts.tolist(), batch.ends.tolist()
    for k, e in enumerate(events):
        out.raw.append(data[starts[k] : ends[k]])
        out.ph.append(e.ph)
        out.pid.append(_hashable(e.pid))
        out.tid.append(_hashable(e.tid))
        out.ts.append(_number(e.ts))
        out.dur.append(_number(e.dur, 0.0))
        out.name.append(e.name if isinstance(e.name, str) else str(e.name))
        kind = kinds.get(e.cat)
        if kind is None:
            norm = normalize_category(e.cat, "")
            kind = LAUNCH if norm in _LAUNCH_CATS else DEVICE if norm in DEVICE_CATS else OTHER
            kinds[e.cat] = kind
        out.kind.append(kind)
        corr = e.args.correlation if e.args is not None else -1
        out.corr.append(corr if isinstance(corr, int) and not isinstance(corr, bool) else -1)
        out.meta_name.append(e.args.meta_name if e.args is not None else None)


def _hashable(value):
    return value if isinstance(value, (int, str, float)) or value is None else repr(value)


def _number(value, default: float = math.nan) -> float:
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        value = float(value)
        return value if math.isfinite(value) else default
    return default
