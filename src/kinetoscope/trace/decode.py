"""Typed msgspec decoding of Kineto JSON, streamed in pieces.

Kineto writes one top-level object whose `traceEvents` array holds nearly all
the bytes. `EventStream` finds where that array opens, then cuts the text that
follows at event boundaries every few hundred kB and decodes each piece straight into
`Event` structs holding only the fields the analyses use. No dict per event is
built, and neither the file nor its decompressed text is ever held whole, so
peak memory stays well under the size of the JSON text.

A cut is only a guess (`},{` can appear inside a string), but a wrong one is
always caught: a prefix of the array that does not end at an event boundary is
never valid JSON, and the decoder then tries the boundary before it. Files
whose head is not what Kineto writes fall back to decoding the whole text.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Iterator
from typing import Any

import msgspec

from ..errors import TraceError
from .json_strings import EVENT_BOUNDARY, last_boundary_outside_strings

# (attribute, JSON key, strict type, default). Ids and counters default to -1
# (absent) so the loader can read them column-wise without testing for None.
# The lenient decoder, used only when the strict one meets an unexpected value
# type, takes the same keys as `Any`, and `normalize_lenient` coerces them.
_ARG_FIELDS: list[tuple[str, str, Any, Any]] = [
    ("external_id", "External id", int | None, -1),
    ("external_id_old", "external id", int | None, -1),
    ("correlation", "correlation", int | None, -1),
    ("stream", "stream", int | None, -1),
    ("device", "device", int | None, -1),
    ("grid", "grid", list[int] | str | None, None),  # str: Inductor's cpu_op "grid(100,)"
    ("block", "block", list[int] | None, None),
    ("registers", "registers per thread", int | None, None),
    ("shared_memory", "shared memory", int | None, None),
    ("occupancy", "est. achieved occupancy %", int | float | None, None),
    ("input_dims", "Input Dims", msgspec.Raw, None),  # kept as JSON text
    ("input_type", "Input type", msgspec.Raw, None),
    ("alloc_bytes", "Bytes", int | None, None),
    ("addr", "Addr", int | None, None),
    ("total_allocated", "Total Allocated", int | None, None),
    ("total_reserved", "Total Reserved", int | None, None),
    ("device_type", "Device Type", int | None, None),
    ("device_id", "Device Id", int | None, None),
    ("python_id", "Python id", int | None, None),
    ("python_parent_id", "Python parent id", int | None, None),
    ("flops", "flops", int | float | None, None),
    ("copy_bytes", "bytes", int | None, None),  # device copies and memsets
    ("meta_name", "name", str | None, None),
]
#: args read as columns: (attribute, default when absent)
ID_ARGS = ("external_id", "external_id_old", "correlation", "stream", "device")


def _make_structs(lenient: bool):
    # gc=False: these structs never form cycles, and keeping hundreds of
    # thousands of them out of the cyclic GC makes decoding about 3x faster.
    arg_fields = [
        (
            attr,
            Any if lenient and typ is not msgspec.Raw else typ,
            msgspec.field(default=default, name=key),
        )
        for attr, key, typ, default in _ARG_FIELDS
    ]
    # strict Args are frozen so that events without args can share one default
    args_type = msgspec.defstruct("Args", arg_fields, gc=False, frozen=not lenient)
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
        # strict: never None, so the loader reads args column-wise without tests
        (
            "args",
            (args_type | None) if lenient else args_type,
            msgspec.field(default_factory=args_type) if lenient else args_type(),
        ),
    ]
    return args_type, msgspec.defstruct("Event", event_fields, gc=False)


_STRICT_ARGS, _STRICT_EVENT = _make_structs(lenient=False)
_LENIENT_ARGS, _LENIENT_EVENT = _make_structs(lenient=True)
_STRICT_BATCH = msgspec.json.Decoder(list[_STRICT_EVENT])
_LENIENT_BATCH = msgspec.json.Decoder(list[_LENIENT_EVENT])
_RAW_LIST = msgspec.json.Decoder(list[msgspec.Raw])


class DeviceProperties(msgspec.Struct):
    id: Any = None
    name: Any = None
    totalGlobalMem: Any = None
    computeMajor: Any = None
    computeMinor: Any = None
    numSms: Any = None


class TopLevel(msgspec.Struct):
    """The trace file's top-level object; unknown keys are ignored."""

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
    # the profiler's own log lines, by level (Kineto's LoggerCollector metadata)
    INFO: Any = None
    WARNING: Any = None
    ERROR: Any = None


_TOP = msgspec.json.Decoder(TopLevel)
#: decompressed bytes decoded per batch: small enough that the text, its events
#: and their columns stay in the CPU caches (4 MB pieces load ~30% slower)
_PIECE = 256 << 10
#: the batch size when the whole text is decoded at once (fallback path)
_RAW_BATCH = 32768
_CONTROL_TABLE = bytes.maketrans(bytes(range(32)), b" " * 32)
_CONTROL_RE = re.compile(rb"[\x00-\x1f]")
_EVENTS_KEY = re.compile(rb'"traceEvents"[ \t\r\n]*:[ \t\r\n]*\[')
_FIRST = re.compile(rb"[ \t\r\n]*([^ \t\r\n])")
_TRAILING_AT = re.compile(r"trailing characters \(byte (\d+)\)")
_CONTROL_WARNING = "raw control characters inside strings were replaced by spaces"


class _Malformed(Exception):
    """A piece of text is not valid JSON (carries msgspec's message)."""


class NotSplittable(Exception):
    """A part of a split file cannot be decoded on its own: load the file in one pass."""


class EventStream:
    """Decode a trace's text pieces into batches of `Event` structs.

    Iterate `batches(chunks)`; afterwards `top` holds the top-level object
    (with `traceEvents` empty) and `count` the number of events decoded.
    Recoverable damage is appended to `warnings`; the rest raises `TraceError`.
    """

    def __init__(self, path: str, warnings: list[str]) -> None:
        self.path = path
        self.warnings = warnings
        self.top: TopLevel | None = None
        self.count = 0
        self._clean = False  # control characters seen: clean every later piece
        self.is_suffix = False  # True: decoding the second part of a split file

    def batches(self, chunks: Iterable[bytes | memoryview]) -> Iterator[list[Any]]:
        chunks = iter(chunks)
        buf, match = self._read_head(chunks)
        head = bytes(buf[: match.end()]) if match else b""
        if not match or not self._head_is_top_level(head):
            for chunk in chunks:  # copy each piece before the next overwrites it
                buf += chunk
            yield from self._whole(bytes(buf))
            return
        rest, offset = yield from self._events(chunks, buf[match.end() :], match.end())
        yield from self._finish(rest, head, offset)

    def prefix_batches(self, chunks: Iterable[bytes | memoryview]) -> Iterator[list[Any]]:
        """Decode text that holds the head and the events before a cut at an event
        boundary (the first part of a split file); raises `NotSplittable` when the
        text does not end exactly at a complete event (a wrong cut) or the head is
        not the usual one."""
        chunks = iter(chunks)
        buf, match = self._read_head(chunks)
        if not match or not self._head_is_top_level(bytes(buf[: match.end()])):
            raise NotSplittable
        rest, _ = yield from self._events(chunks, buf[match.end() :], match.end())
        try:
            yield self._decode_array(_bracket(rest, len(rest)))
        except (_Malformed, TraceError):
            raise NotSplittable from None

    def suffix_batches(
        self, chunks: Iterable[bytes | memoryview], head: bytes, offset: int
    ) -> Iterator[list[Any]]:
        """Decode the events that start at byte `offset` (just after a cut) up to the
        array's end, then the top-level keys after it (`head`: the text up to and
        including `"traceEvents": [`). A file cut off early raises `NotSplittable`:
        its warning counts every event of the file, which only one pass can."""
        self.is_suffix = True
        rest, offset = yield from self._events(iter(chunks), bytearray(), offset)
        yield from self._finish(rest, head, offset)

    def _read_head(self, chunks: Iterator[bytes | memoryview]) -> tuple[bytearray, Any]:
        """Read until `"traceEvents": [` (the match) or the end of the text (None)."""
        buf = bytearray()
        started = False
        for chunk in chunks:
            searched = max(0, len(buf) - 32)
            buf += chunk
            if not started:
                started = self._check_start(buf)
            if started and (match := _EVENTS_KEY.search(buf, searched)):
                return buf, match
        if not started:
            raise TraceError(self.path, "is empty")
        return buf, None

    def _events(self, chunks: Iterator[bytes | memoryview], rest: bytearray, offset: int):
        """Yield batches of the events in `rest` + `chunks`, cut at event boundaries
        every `_PIECE` bytes; return (the undecoded tail, its offset in the text)."""
        for chunk in chunks:
            rest += chunk
            if len(rest) < _PIECE:
                continue
            cut = _last_boundary(rest, len(rest))
            decoded = self._decode_before(rest, cut) if cut is not None else None
            if decoded is None:  # one event larger than a piece: keep reading
                continue
            batch, cut = decoded
            yield batch
            del rest[:cut]
            offset += cut
        return rest, offset

    # ---- the head: everything before the event array --------------------
    def _check_start(self, buf: bytearray) -> bool:
        first = _FIRST.match(buf)
        if first is None:
            return False
        if first.group(1) == b"[":
            raise TraceError(
                self.path, "is a JSON array, not a Kineto trace object with 'traceEvents'"
            )
        if first.group(1) != b"{":
            raise TraceError(self.path, "is not JSON (it does not start with '{')")
        return True

    @staticmethod
    def _head_is_top_level(head: bytes) -> bool:
        """True when `"traceEvents": [` found is a key of the top-level object."""
        try:
            _TOP.decode(head + b"]}")
        except (msgspec.DecodeError, msgspec.ValidationError):
            return False
        return True

    # ---- the event array, piece by piece ---------------------------------
    def _decode_before(self, rest: bytearray, cut: tuple[int, int]) -> tuple[list[Any], int] | None:
        """Decode the events before boundary `cut`; (batch, start of the next event),
        or None when the piece holds no boundary outside a string (one event larger
        than the piece: read on).

        `cut` is a guess; when it and the 16 before it fail (strings full of `},{`),
        the piece is scanned string-aware from its start, which is an event's start."""
        error = None
        for _ in range(16):
            try:
                return self._decode_array(_bracket(rest, cut[0])), cut[1]
            except _Malformed as exc:
                error = error or exc
            cut = _last_boundary(rest, cut[0] - 1)
            if cut is None:
                break
        cut = last_boundary_outside_strings(rest)
        if cut is None:
            return None
        try:
            return self._decode_array(_bracket(rest, cut[0])), cut[1]
        except _Malformed as exc:
            raise TraceError(self.path, f"is not valid JSON ({error or exc})") from None

    def _finish(self, rest: bytearray, head: bytes, offset: int) -> Iterator[list[Any]]:
        """The last piece: events up to the array's `]`, then the top-level keys after it."""
        text = b"[" + rest
        end = self._array_end(text)
        if end is not None:
            yield self._decode_array(text[:end])
            self.top = self._decode_tail(head, text[end:])
            return
        # no closing bracket: the file was cut off; keep every complete event
        if self.is_suffix:
            raise NotSplittable
        recovered = self._recover(rest)
        if recovered is not None:
            batch, lost_at = recovered
            yield batch
            offset += lost_at
        elif not self.count:
            raise TraceError(self.path, "is not valid JSON (it ends before its first event)")
        self.top = _TOP.decode(head + b"]}")
        self.warnings.append(
            f"file is truncated at byte {offset}: "
            f"recovered {self.count} complete events before the cut"
        )

    def _array_end(self, text: bytes) -> int | None:
        """Length of the complete event array at the start of `text` ('[' included)."""
        end = _complete_array_end(text)
        if end is None and not self._clean and _CONTROL_RE.search(text):
            end = _complete_array_end(text.translate(_CONTROL_TABLE))
        return end

    def _decode_tail(self, head: bytes, tail: bytes) -> TopLevel:
        """The top-level object: its keys before the events and after them."""
        text = head + b"]" + tail
        try:
            return _TOP.decode(text)
        except msgspec.DecodeError:
            pass
        try:  # control characters in the keys after the events
            top = _TOP.decode(text.translate(_CONTROL_TABLE))
        except msgspec.DecodeError:
            self.warnings.append("the keys after 'traceEvents' are not valid JSON; ignored")
            return _TOP.decode(head + b"]}")
        self._warn_clean()
        return top

    def _recover(self, rest: bytearray) -> tuple[list[Any], int] | None:
        """Events before the last complete one in a piece cut off mid-event.

        Tries the last few `}` (inner `}` of `args` fail fast)."""
        end = len(rest)
        for _ in range(64):
            end = rest.rfind(b"}", 0, end)
            if end < 0:
                return None
            try:
                return self._decode_array(_bracket(rest, end + 1)), end + 1
            except _Malformed:
                continue
        return None

    def _decode_array(self, text: bytes | bytearray) -> list[Any]:
        """Decode `[event, ...]`, cleaning control characters once they are seen."""
        if self._clean:
            text = text.translate(_CONTROL_TABLE)
        try:
            batch = self._typed(text)
        except msgspec.DecodeError as exc:
            if self._clean or not _CONTROL_RE.search(text):
                raise _Malformed(_short(exc)) from None
            # PyTorch writes raw control characters inside strings (kernel
            # names, stack frames); JSON forbids them. Outside strings they
            # are whitespace, so mapping every one to a space is safe.
            try:
                batch = self._typed(text.translate(_CONTROL_TABLE))
            except msgspec.DecodeError:
                raise _Malformed(_short(exc)) from None
            self._clean = True
            self._warn_clean()
        self.count += len(batch)
        return batch

    def _typed(self, text: bytes | bytearray) -> list[Any]:
        try:
            return _STRICT_BATCH.decode(text)
        except msgspec.ValidationError:
            pass
        try:
            return normalize_lenient(_LENIENT_BATCH.decode(text))
        except msgspec.ValidationError as exc:
            raise TraceError(
                self.path, f"has events of an unexpected shape ({_short(exc)})"
            ) from None

    def _warn_clean(self) -> None:
        if _CONTROL_WARNING not in self.warnings:
            self.warnings.append(_CONTROL_WARNING)

    # ---- fallback: the whole text at once --------------------------------
    def _whole(self, data: bytes) -> Iterator[list[Any]]:
        """Decode a file whose head is unusual: whole-text decode, with repairs."""
        top = decode_top(data, self.path, self.warnings)
        del data
        self.top = top
        raw = top.traceEvents
        if raw is None:  # not a Kineto trace; the loader says so
            return
        top.traceEvents = []
        for begin in range(0, len(raw), _RAW_BATCH):
            text = b"[" + b",".join(raw[begin : begin + _RAW_BATCH]) + b"]"
            try:
                yield self._decode_array(text)
            except _Malformed as exc:  # each Raw is valid JSON: cannot happen
                raise TraceError(self.path, f"is not valid JSON ({exc})") from None


def _complete_array_end(text: bytes) -> int | None:
    """Where the array opening `text` closes, when the object's remaining keys follow."""
    try:
        _RAW_LIST.decode(text)
    except msgspec.DecodeError as exc:
        at = _TRAILING_AT.search(str(exc))
        if at is None:
            return None
        # msgspec reports where the trailing text starts; the array ends at the
        # last ']' before it (checked, so an off-by-one there cannot matter)
        end = text.rfind(b"]", 0, int(at.group(1))) + 1
        try:
            _RAW_LIST.decode(text[:end])
        except msgspec.DecodeError:
            return None
        return end
    return None  # the array is not followed by the rest of the object


def _bracket(rest: bytearray, end: int) -> bytearray:
    """`[` + rest[:end] + `]` in one copy."""
    text = bytearray(b"[")
    with memoryview(rest) as view:
        text += view[:end]
    text += b"]"
    return text


def _last_boundary(text: bytearray, before: int) -> tuple[int, int] | None:
    """(end of an event, start of the next) for the last `},{` ending before `before`."""
    pos = before
    while pos > 0:
        pos = text.rfind(b"}", 0, pos)
        if pos < 0:
            return None
        match = EVENT_BOUNDARY.match(text, pos)
        if match:
            return pos + 1, match.end() - 1
    return None


def normalize_lenient(batch: list[Any]) -> list[Any]:
    """Coerce leniently decoded events to the strict field types, in place."""
    for ev in batch:
        ev.ph = ev.ph if isinstance(ev.ph, str) else str(ev.ph)
        ev.name = ev.name if isinstance(ev.name, str) else str(ev.name)
        ev.cat = ev.cat if ev.cat is None or isinstance(ev.cat, str) else str(ev.cat)
        ev.ts = as_float(ev.ts)
        ev.dur = as_float(ev.dur)
        for attr in ("pid", "tid"):
            value = getattr(ev, attr)
            if not isinstance(value, (int, str)):
                setattr(ev, attr, str(value))
        args = ev.args
        if not isinstance(args, _LENIENT_ARGS):
            args = ev.args = _LENIENT_ARGS()
        for attr in ID_ARGS:
            setattr(args, attr, as_int(getattr(args, attr)))
        for attr in ("grid", "block"):
            if not isinstance(getattr(args, attr), list):
                setattr(args, attr, None)
        if args.flops is not None:
            args.flops = as_float(args.flops)
        if args.meta_name is not None:
            args.meta_name = str(args.meta_name)
    return batch


def as_int(value: Any, default: int = -1) -> int:
    """`value` as an int, `default` where absent or not a number (ids use -1)."""
    if value is None:
        return default
    try:
        return int(value)
    except (TypeError, ValueError):
        return default


def as_float(value: Any) -> float:
    """`value` as a float, NaN where it is not a number."""
    try:
        return float(value)
    except (TypeError, ValueError):
        return math.nan


def decode_top(data: bytes, path: str, warnings: list[str]) -> TopLevel:
    """Decode the whole top-level object, repairing control characters and truncation."""
    try:
        return _decode_top_checked(data, path)
    except msgspec.DecodeError as first:
        error = first
    if _CONTROL_RE.search(data):
        cleaned = data.translate(_CONTROL_TABLE)
        try:
            top = _decode_top_checked(cleaned, path)
        except msgspec.DecodeError as second:
            data, error = cleaned, second
        else:
            warnings.append(_CONTROL_WARNING)
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
    """Cut after the last complete event and close the array and object."""
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


def events_head(text: bytes) -> bytes | None:
    """The text up to and including `"traceEvents": [` when `text`, the start of
    a file, opens the usual top-level object with it; else None."""
    first = _FIRST.match(text)
    if first is None or first.group(1) != b"{":
        return None
    match = _EVENTS_KEY.search(text)
    if match is None:
        return None
    head = text[: match.end()]
    return head if EventStream._head_is_top_level(head) else None


def first_boundary(text: bytes) -> tuple[int, int] | None:
    """(end of an event, start of the next) for the first `},{` in `text` after which
    an event really starts, `text` starting at an unknown place in the array.

    A `{` inside a string is never followed by a complete object with a key (its
    quotes would be escaped), so a candidate whose `{` opens a non-empty object
    followed by `,` or `]` is taken. Still a guess in contrived cases (a key that
    ends in `},{`); `prefix_batches` catches a wrong one."""
    for tried, match in enumerate(EVENT_BOUNDARY.finditer(text)):
        if tried >= 256:
            break
        if _opens_an_event(text, match.end() - 1):
            return match.start() + 1, match.end() - 1
    return None


def _opens_an_event(text: bytes, start: int) -> bool:
    """True when the `{` at `start` opens a non-empty object followed by `,` or `]`."""
    with memoryview(text) as view:
        try:
            msgspec.json.decode(view[start:])
            return False  # the window ended exactly there: cannot tell
        except RecursionError:
            return False
        except msgspec.DecodeError as exc:
            at = _TRAILING_AT.search(str(exc))
            if at is None:
                return False
            # msgspec's byte is near the trailing text; the object ends at the last
            # `}` before it (checked by decoding that much)
            end = text.rfind(b"}", start, start + int(at.group(1)) + 1) + 1
        try:
            value = msgspec.json.decode(view[start:end])
        except (msgspec.DecodeError, RecursionError):
            return False
    after = _FIRST.match(text, end)
    return (
        isinstance(value, dict)
        and bool(value)
        and after is not None
        and after.group(1) in (b",", b"]")
    )
