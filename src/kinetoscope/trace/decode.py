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

The pieces: `schema` (the structs), `cuts` (where to cut), `top_decode` (the
whole-text fallback with repairs).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any

import msgspec

from ..errors import TraceError
from .bounds import PrefixCheck
from .cuts import (
    EVENTS_KEY,
    FIRST_BYTE,
    bracketed,
    complete_array_end,
    head_is_top_level,
    last_boundary,
)
from .json_strings import BoundaryScan
from .repair import (
    REPAIR_WARNINGS,
    drop_big_ints,
    flatten_deep,
    has_big_int,
    replace_lone_surrogates,
)
from .schema import (
    LENIENT_BATCH,
    STRICT_BATCH,
    TOP_DECODER,
    OutOfRange,
    TopLevel,
    normalize_lenient,
)
from .top_decode import CONTROL_RE, CONTROL_TABLE, CONTROL_WARNING, decode_top, short_error
from .utf8 import utf8_problem

#: decompressed bytes decoded per batch: small enough that the text, its events
#: and their columns stay in the CPU caches (4 MB pieces load ~30% slower)
_PIECE = 256 << 10
#: what a bare array of events (Chrome's JSON Array Format) is read as the events of
ARRAY_HEAD = b'{"traceEvents": ['
BOM = b"\xef\xbb\xbf"
NOT_JSON = "is not JSON (it does not start with '{' or '[')"
#: the batch size when the whole text is decoded at once (fallback path)
_RAW_BATCH = 32768
#: bytes from a `}` to the `{` of the next event that a boundary search looks back
#: over when more text arrives (whitespace between events beyond it is not looked for)
_BOUNDARY_SPAN = 4096
_BLANKS = (b" ", b"\t", b"\r", b"\n")  # JSON's whitespace


#: the decoder's refusal of nesting it cannot recurse into, as the user is told it
DEEP_PROBLEM = "has values nested too deeply to decode (about 1000 levels)"


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
        self._repairs: dict[str, int] = {}  # repairs made so far, by kind (`_note`)
        self.array_format = False  # the text is a bare array of events

    def batches(self, chunks: Iterable[bytes | memoryview]) -> Iterator[list[Any]]:
        chunks = iter(chunks)
        buf, match = self._read_head(chunks)
        if self.array_format:  # Chrome's JSON Array Format: `[event, ...` alone
            rest, offset = yield from self._events(chunks, buf[match.end() :], match.end())
            yield from self._finish(rest, ARRAY_HEAD, offset)
            return
        head = bytes(buf[: match.end()]) if match else b""
        if not match or not head_is_top_level(head):
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
        if self.array_format or not match or not head_is_top_level(bytes(buf[: match.end()])):
            raise NotSplittable
        rest, _ = yield from self._events(chunks, buf[match.end() :], match.end())
        try:
            yield self._decode_array(bracketed(rest, len(rest)))
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
        """Read until `"traceEvents": [` (the match) or the end of the text (None);
        for a bare array (`array_format`), the match is its opening `[`. A UTF-8
        byte-order mark is dropped (editors on Windows write one)."""
        buf = bytearray()
        started = False
        check = PrefixCheck(self.path)
        for chunk in chunks:
            searched = max(0, len(buf) - 32)
            buf += chunk
            check(buf)
            if not started:
                if len(buf) < len(BOM) and BOM.startswith(bytes(buf)):
                    continue
                if buf.startswith(BOM):
                    del buf[: len(BOM)]
                started = self._check_start(buf)
                if self.array_format:
                    return buf, FIRST_BYTE.match(buf)
            if started and (match := EVENTS_KEY.search(buf, searched)):
                return buf, match
        if not started:
            raise TraceError(self.path, "is empty")
        return buf, None

    def _events(self, chunks: Iterator[bytes | memoryview], rest: bytearray, offset: int):
        """Yield batches of the events in `rest` + `chunks`, cut at event boundaries
        every `_PIECE` bytes; return (the undecoded tail, its offset in the text).

        Linear in the text whatever it holds: whitespace before an event (which is
        outside any string, `rest` starting between events) is dropped as it comes,
        a boundary is searched for only in text not searched before, and text that
        grows without one is checked as it doubles (`bounds.PrefixCheck`)."""
        check = PrefixCheck(self.path, b"[")
        searched = 0  # rest[:searched] holds no `}` that ends an event
        scan = BoundaryScan()  # the string-aware search of this piece, where guesses failed
        for chunk in chunks:
            rest += chunk
            if rest[:1] in _BLANKS:
                blank = len(rest) - len(rest.lstrip(b" \t\r\n"))
                del rest[:blank]
                offset += blank
            if len(rest) < _PIECE:
                continue
            cut = last_boundary(rest, len(rest), searched)
            decoded = self._decode_before(rest, cut, scan) if cut is not None else None
            if decoded is None:  # one event larger than a piece: keep reading
                searched = max(0, len(rest) - _BOUNDARY_SPAN)
                check(rest)
                continue
            batch, cut = decoded
            yield batch
            del rest[:cut]
            offset += cut
            searched = 0
            check, scan = PrefixCheck(self.path, b"["), BoundaryScan()
        return rest, offset

    @property
    def repairs(self) -> dict[str, int]:
        """Repairs made so far, by kind (`repair.REPAIR_WARNINGS`), and how many."""
        return dict(self._repairs)

    def decode_events(self, text: bytes | bytearray) -> list[Any]:
        """Events of `text` (`[event, ...]`, complete) with every check and repair
        the loader makes; `slice` decides on these, so it reads what `explain`
        reads and refuses what it refuses, with the same message."""
        try:
            return self._decode_array(text)
        except _Malformed as exc:
            raise TraceError(self.path, f"is not valid JSON ({exc})") from None

    # ---- the head: everything before the event array --------------------
    def _check_start(self, buf: bytearray) -> bool:
        first = FIRST_BYTE.match(buf)
        if first is None:
            return False
        if first.group(1) == b"[":
            self.array_format = True
            return True
        if first.group(1) != b"{":
            raise TraceError(self.path, NOT_JSON)
        return True

    # ---- the event array, piece by piece ---------------------------------
    def _decode_before(
        self, rest: bytearray, cut: tuple[int, int], scan: BoundaryScan
    ) -> tuple[list[Any], int] | None:
        """Decode the events before boundary `cut`; (batch, start of the next event),
        or None when the piece holds no boundary outside a string (one event larger
        than the piece: read on).

        `cut` is a guess; when it and the 16 before it fail (strings full of `},{`),
        the piece is scanned string-aware (`scan`, from the piece's start, an event's
        start, on to where it stopped last time). Once a piece has been scanned, its
        guesses are not tried again: each decodes the piece up to the guess, and an
        event of MBs growing a chunk at a time made that quadratic."""
        error = None
        for _ in range(16 if not scan.upto else 0):
            try:
                return self._decode_array(bracketed(rest, cut[0])), cut[1]
            except _Malformed as exc:
                error = error or exc
            cut = last_boundary(rest, cut[0] - 1)
            if cut is None:
                break
        cut = scan.last(rest, len(rest) - _BOUNDARY_SPAN)
        if cut is None:
            return None
        try:
            return self._decode_array(bracketed(rest, cut[0])), cut[1]
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
        if self.array_format and (batch := self._bare_array(text)) is not None:
            yield batch
            self.top = TOP_DECODER.decode(head + b"]}")
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
        self.top = TOP_DECODER.decode(head + b"]}")
        self.warnings.append(
            f"file is truncated at byte {offset}: "
            f"recovered {self.count} complete events before the cut"
        )

    def _bare_array(self, text: bytes) -> list[Any] | None:
        """The events of a bare array, closed or left open after its last complete
        event (Chrome's JSON Array Format allows that, and a trailing comma); None
        when the text ends inside an event (the caller recovers what it can)."""
        body = text.rstrip(b" \t\r\n")
        if not body.endswith(b"]"):
            body = (body[:-1] if body.endswith(b",") else body) + b"]"
        try:
            return self._decode_array(body)
        except _Malformed:
            return None

    def _array_end(self, text: bytes) -> int | None:
        """Length of the complete event array at the start of `text` ('[' included)."""
        end = complete_array_end(text)
        if end is None:  # the repairs `_decode_array` makes keep the length: the same end
            repaired = replace_lone_surrogates(text.translate(CONTROL_TABLE))[0]
            end = complete_array_end(repaired) if repaired != text else None
        return end

    def _decode_tail(self, head: bytes, tail: bytes) -> TopLevel:
        """The top-level object: its keys before the events and after them."""
        text = head + b"]" + tail
        try:
            return TOP_DECODER.decode(text)
        except msgspec.DecodeError:
            pass
        try:  # control characters in the keys after the events
            top = TOP_DECODER.decode(text.translate(CONTROL_TABLE))
        except msgspec.DecodeError:
            self.warnings.append("the keys after 'traceEvents' are not valid JSON; ignored")
            return TOP_DECODER.decode(head + b"]}")
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
                return self._decode_array(bracketed(rest, end + 1)), end + 1
            except _Malformed:
                continue
        return None

    def _decode_array(self, text: bytes | bytearray) -> list[Any]:
        """Decode `[event, ...]`, cleaning control characters once they are seen
        and repairing lone surrogate escapes (`repair.py`)."""
        if self._clean:
            text = text.translate(CONTROL_TABLE)
        try:
            batch = self._typed(text)
        except msgspec.DecodeError as exc:
            batch = self._decode_repaired(text, exc)
        self.count += len(batch)
        return batch

    def _decode_repaired(self, text: bytes | bytearray, exc: msgspec.DecodeError) -> list[Any]:
        """The batch after the repairs that apply, or `_Malformed` (a wrong cut,
        or text that no repair makes JSON)."""
        cleaned = self._clean or not CONTROL_RE.search(text)
        if not cleaned:
            # PyTorch writes raw control characters inside strings (kernel
            # names, stack frames); JSON forbids them. Outside strings they
            # are whitespace, so mapping every one to a space is safe.
            text = text.translate(CONTROL_TABLE)
        text, surrogates = replace_lone_surrogates(text)
        if cleaned and not surrogates:
            raise _Malformed(short_error(exc)) from None
        try:
            batch = self._typed(text)
        except msgspec.DecodeError:
            raise _Malformed(short_error(exc)) from None
        if not cleaned:
            self._clean = True
            self._warn_clean()
        self._note("surrogates", surrogates)
        return batch

    def _typed(self, text: bytes | bytearray) -> list[Any]:
        """Typed events; a value nested too deep for the decoder is dropped first."""
        try:
            batch = self._typed_once(text)
        except RecursionError:
            text, deep = flatten_deep(text)
            try:
                batch = self._typed_once(text)
            except RecursionError:  # deeper than the decoder can go before level 4
                raise TraceError(self.path, DEEP_PROBLEM) from None
            self._note("deep", deep)
        if has_big_int(text):
            self._note("big_ints", drop_big_ints(batch))
        return batch

    def _typed_once(self, text: bytes | bytearray) -> list[Any]:
        try:  # the lenient decoder, where the strict one meets an unexpected type
            try:
                return STRICT_BATCH.decode(text)
            except msgspec.ValidationError:
                return normalize_lenient(LENIENT_BATCH.decode(text))
        except UnicodeDecodeError as exc:  # in either (lenient: past the odd type)
            raise TraceError(self.path, utf8_problem(exc)) from None
        except OutOfRange as exc:
            raise TraceError(self.path, str(exc)) from None
        except msgspec.ValidationError as exc:
            what = (
                "is a JSON array, not of trace events"
                if self.array_format
                else "has events of an unexpected shape"
            )
            raise TraceError(self.path, f"{what} ({short_error(exc)})") from None

    def _note(self, kind: str, count: int) -> None:
        """Count a repair in its one warning (kept up to date as pieces are decoded)."""
        if not count:
            return
        old = REPAIR_WARNINGS[kind].format(self._repairs.get(kind, 0))
        self._repairs[kind] = self._repairs.get(kind, 0) + count
        new = REPAIR_WARNINGS[kind].format(self._repairs[kind])
        if old in self.warnings:
            self.warnings[self.warnings.index(old)] = new
        else:
            self.warnings.append(new)

    def _warn_clean(self) -> None:
        if CONTROL_WARNING not in self.warnings:
            self.warnings.append(CONTROL_WARNING)

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
