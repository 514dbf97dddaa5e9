"""Typed msgspec decoding of Kineto JSON into column chunks.

The top-level object is decoded with `traceEvents` as a list of `msgspec.Raw`
(zero-copy slices of the buffer), then events are decoded in batches straight
into `Event` structs holding only the fields the analyses use and flattened into
lists. No dict per event is ever built, and only one batch of structs is alive
at a time, which keeps peak memory near the size of the JSON text.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import msgspec

from ..errors import TraceError

# (attribute, JSON key, strict type). The lenient decoder, used only when the
# strict one meets an unexpected value type, takes the same keys as `Any`.
_ARG_FIELDS: list[tuple[str, str, Any]] = [
    ("external_id", "External id", int | None),
    ("external_id_old", "external id", int | None),
    ("correlation", "correlation", int | None),
    ("stream", "stream", int | None),
    ("device", "device", int | None),
    ("grid", "grid", list[int] | None),
    ("block", "block", list[int] | None),
    ("registers", "registers per thread", int | None),
    ("shared_memory", "shared memory", int | None),
    ("input_dims", "Input Dims", msgspec.Raw),
    ("input_type", "Input type", msgspec.Raw),
    ("alloc_bytes", "Bytes", int | None),
    ("addr", "Addr", int | None),
    ("total_allocated", "Total Allocated", int | None),
    ("total_reserved", "Total Reserved", int | None),
    ("device_type", "Device Type", int | None),
    ("device_id", "Device Id", int | None),
    ("python_id", "Python id", int | None),
    ("python_parent_id", "Python parent id", int | None),
    ("copy_bytes", "bytes", int | None),
    ("flops", "flops", int | float | None),
    ("meta_name", "name", str | None),
    ("labels", "labels", str | None),
]


def _make_structs(lenient: bool):
    arg_fields = [
        (attr, Any if lenient else typ, msgspec.field(default=None, name=key))
        for attr, key, typ in _ARG_FIELDS
    ]
    args_type = msgspec.defstruct("Args", arg_fields, frozen=False)
    num = Any if lenient else float
    ident = Any if lenient else (int | str)
    text = Any if lenient else (str | None)
    event_fields = [
        ("ph", Any if lenient else str, ""),
        ("name", Any if lenient else str, ""),
        ("cat", text, None),
        ("ts", num, math.nan),
        ("dur", num, 0.0),
        ("pid", ident, 0),
        ("tid", ident, 0),
        ("id", Any if lenient else (int | str | None), None),
        ("bp", text, None),
        ("args", args_type | None, None),
    ]
    return args_type, msgspec.defstruct("Event", event_fields)


_STRICT_ARGS, _STRICT_EVENT = _make_structs(lenient=False)
_LENIENT_ARGS, _LENIENT_EVENT = _make_structs(lenient=True)
_STRICT_BATCH = msgspec.json.Decoder(list[_STRICT_EVENT])
_LENIENT_BATCH = msgspec.json.Decoder(list[_LENIENT_EVENT])


class DeviceProperties(msgspec.Struct):
    id: Any = None
    name: Any = None
    totalGlobalMem: Any = None
    computeMajor: Any = None
    computeMinor: Any = None
    numSms: Any = None


class TopLevel(msgspec.Struct):
    """The trace file's top-level object; unknown keys are kept in `extras` later."""

    traceEvents: list[msgspec.Raw] | None = None
    schemaVersion: Any = None
    deviceProperties: list[DeviceProperties] | None = None
    distributedInfo: Any = None
    baseTimeNanoseconds: Any = None
    displayTimeUnit: Any = None
    traceName: Any = None
    cuda_runtime_version: Any = None
    cuda_driver_version: Any = None
    cupti_version: Any = None
    hip_runtime_version: Any = None
    hip_driver_version: Any = None
    roctracer_version: Any = None
    kinetoscope: Any = None


_TOP = msgspec.json.Decoder(TopLevel)
_BATCH = 32768
_CONTROL = bytes(range(32))
_SPACES = b" " * 32
_CONTROL_TABLE = bytes.maketrans(_CONTROL, _SPACES)
_CONTROL_RE = re.compile(rb"[\x00-\x08\x0b\x0c\x0e-\x1f]")


def decode_top(data: bytes, path: str, warnings: list[str]) -> TopLevel:
    """Decode the top-level object, repairing control characters and truncation."""
    try:
        return _decode_top_checked(data, path)
    except msgspec.DecodeError as first:
        error = first
    if _CONTROL_RE.search(data) or b"\n" in data or b"\t" in data:
        # PyTorch writes raw control characters inside strings (e.g. kernel
        # names, stack frames); JSON forbids them. Outside strings they are
        # whitespace, so mapping every one to a space is safe everywhere.
        cleaned = data.translate(_CONTROL_TABLE)
        try:
            top = _decode_top_checked(cleaned, path)
        except msgspec.DecodeError as second:
            data, error = cleaned, second
        else:
            warnings.append("raw control characters inside strings were replaced by spaces")
            return top
    recovered = _recover_truncated(data, path)
    if recovered is None:
        raise TraceError(path, f"is not valid JSON ({_short(error)})")
    top, lost_at = recovered
    count = len(top.traceEvents or [])
    warnings.append(
        f"file is truncated at byte {lost_at}: recovered {count} complete events before the cut"
    )
    return top


def _decode_top_checked(data: bytes, path: str) -> TopLevel:
    try:
        return _TOP.decode(data)
    except msgspec.ValidationError as exc:
        raise TraceError(path, f"is not a Kineto trace ({_short(exc)})") from None


def _short(exc: Exception) -> str:
    return str(exc).splitlines()[0][:160]


def _recover_truncated(data: bytes, path: str) -> tuple[TopLevel, int] | None:
    """Cut after the last complete event and close the array and object.

    Kineto writes `traceEvents` last but for a few scalar keys, so a file cut
    short loses the tail of the event array. Trying the last few `}` positions
    finds the end of the last complete event (inner `}` of `args` fail fast).
    """
    start = data.find(b'"traceEvents"')
    if start < 0:
        return None
    end = len(data)
    for _ in range(64):
        end = data.rfind(b"}", start, end)
        if end < 0:
            return None
        candidate = data[: end + 1] + b"]}"
        try:
            return _TOP.decode(candidate), end + 1
        except (msgspec.DecodeError, msgspec.ValidationError):
            continue
    return None


@dataclass
class Columns:
    """Flat per-event lists filled batch by batch; turned into numpy by the builder."""

    ph: list[str] = field(default_factory=list)
    name: list[str] = field(default_factory=list)
    cat: list[Any] = field(default_factory=list)
    ts: list[float] = field(default_factory=list)
    dur: list[float] = field(default_factory=list)
    pid: list[Any] = field(default_factory=list)
    tid: list[Any] = field(default_factory=list)
    flow_id: list[Any] = field(default_factory=list)
    bp: list[Any] = field(default_factory=list)
    #: index (into these columns) -> Args, only for events that had args
    args: dict[int, Any] = field(default_factory=dict)


def decode_events(raw_events: list[msgspec.Raw], path: str) -> Iterator[list[Any]]:
    """Yield batches of decoded `Event` structs."""
    for begin in range(0, len(raw_events), _BATCH):
        batch = raw_events[begin : begin + _BATCH]
        blob = b"[" + b",".join(batch) + b"]"
        try:
            yield _STRICT_BATCH.decode(blob)
        except msgspec.ValidationError:
            try:
                yield _LENIENT_BATCH.decode(blob)
            except msgspec.ValidationError as exc:
                raise TraceError(
                    path, f"has events of an unexpected shape ({_short(exc)})"
                ) from None
