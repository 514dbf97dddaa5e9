"""Find each event's bytes in a Kineto document streamed in chunks, without parsing it.

`slice` must copy the events it keeps byte for byte and never hold the whole
document, so it needs the span of every element of `traceEvents` while the text
arrives in pieces. Looking for `},{` is wrong: that text is common inside
strings (Python reprs in `args`). This scanner tracks JSON string state the way
a parser does (`trace.json_strings`, shared with the loader) and brace/bracket
depth outside strings, vectorised with numpy over megabytes at a time, so the
cost is a few passes over the bytes in C.

Everything outside the `traceEvents` array (the top-level metadata such as
`deviceProperties`, `distributedInfo`, `baseTimeNanoseconds`, `traceName`) is
collected verbatim in `top`, with the array itself left empty (`[]`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np

from ..trace.bounds import EVENT_LIMIT
from ..trace.json_strings import OutsideStrings
from ..trace.stack import DECODE_STACK

_OPEN_OBJ, _CLOSE_OBJ, _OPEN_ARR, _CLOSE_ARR = 123, 125, 91, 93
#: bytes gathered before a scan: large enough that numpy's per-call cost vanishes
SCAN_BYTES = 4 << 20
_EVENTS_KEY = re.compile(rb'"traceEvents"\s*:\s*$')
_BOM = b"\xef\xbb\xbf"
_ARRAY_HEAD = b'{"traceEvents":'
#: depth of the document's brackets (an event sits at depth 3: the document's object,
#: traceEvents, the event) past which an event of megabytes is refused while it is
#: still unfinished: `load` refuses the same, its decoder checking text held without
#: an event boundary (`trace.bounds`); a small deep event is read, its deep values
#: dropped (`trace.repair`)
MAX_DEPTH = 2 + DECODE_STACK


class ScanError(ValueError):
    """The text is not a JSON object with a `traceEvents` array of objects."""


@dataclass
class Batch:
    """Events found in one scan: event k is `data[starts[k]:ends[k]]`, in file order.

    Between two consecutive events there is only a comma and whitespace, so
    `data[starts[0]:ends[-1]]` is the text of a JSON array's elements.
    """

    data: bytes
    starts: np.ndarray
    ends: np.ndarray

    def __len__(self) -> int:
        return len(self.starts)

    def event(self, k: int) -> bytes:
        return self.data[self.starts[k] : self.ends[k]]


class EventScanner:
    """Feed decompressed text in any pieces; get `Batch`es of complete events back.

    State between scans is only the bytes not yet scanned and the depth at their
    start: a scan always stops right after a brace or bracket outside any
    string, at depth 2 or less (between two events), so no event and no string
    is ever cut.
    """

    def __init__(self) -> None:
        self.top = bytearray()  # the document outside the events array
        self.events_seen = False
        self._pending = bytearray()
        self._depth = 0  # nesting depth at the start of `_pending`
        self._in_events = False  # `_pending` starts inside the traceEvents array
        self._threshold = SCAN_BYTES
        self.offset = 0  # bytes of the document scanned so far (for messages)
        self._started = False  # the start was looked at (`_start`)
        self.array_format = False  # a bare array of events, read as `{"traceEvents": [...]}`

    def feed(self, data: bytes | memoryview) -> Batch | None:
        self._pending += data
        if not self._started and not self._start():
            return None
        if len(self._pending) < self._threshold:
            return None
        return self._scan(final=False)

    def _start(self) -> bool:
        """Before the first scan: drop a UTF-8 byte-order mark, and read a bare array
        of events (Chrome's JSON Array Format) as the events of `{"traceEvents": [`."""
        text = bytes(self._pending[:16]).lstrip(b" \t\r\n")
        if not text or _BOM.startswith(text[:3]) and len(text) < 3:
            return False  # too little to tell yet
        self._started = True
        if text.startswith(_BOM):
            del self._pending[: self._pending.index(_BOM) + len(_BOM)]
            text = text[len(_BOM) :].lstrip(b" \t\r\n")
        if text.startswith(b"["):
            self.array_format = True
            self._pending[:0] = _ARRAY_HEAD
        return True

    def finish(self) -> Batch | None:
        """Scan what is left; raises `ScanError` unless the document is complete."""
        if not self._started:
            self._start()
        if self.array_format:
            return self._finish_array()
        batch = self._scan(final=True)
        if not self.events_seen:
            raise ScanError("no top-level traceEvents array")
        return batch

    def _finish_array(self) -> Batch | None:
        """A bare array, closed, or left open after its last event (and a comma),
        which the format allows: close it, and the object it was read into."""
        pending = bytes(self._pending)
        try:
            self._pending += b"}"
            return self._scan(final=True)
        except ScanError:
            body = pending.rstrip(b" \t\r\n")
            self._pending = bytearray(body[:-1] if body.endswith(b",") else body)
            self._pending += b"]}"
            return self._scan(final=True)

    # ---- the scan ---------------------------------------------------------
    def _scan(self, final: bool) -> Batch | None:
        data = bytes(self._pending)
        raw = np.frombuffer(data, np.uint8)
        strings = OutsideStrings()  # a block at a time: hostile runs made GB arrays
        marks = strings.marks(raw, (_OPEN_OBJ, _CLOSE_OBJ, _OPEN_ARR, _CLOSE_ARR))
        chars = raw[marks]
        # int8 steps and int32 depths: a document of brackets has one mark per byte, and
        # four int64 arrays per mark took 1.5 GB on a 73 MB event of `{"a":` (the fuzz)
        delta = np.where((chars == _OPEN_OBJ) | (chars == _OPEN_ARR), 1, -1).astype(np.int8)
        after = np.cumsum(delta, dtype=np.int32)
        after += self._depth
        before = after - delta
        if final:
            end_depth = int(after[-1]) if len(after) else self._depth
            if strings.in_string or end_depth != 0:
                raise ScanError("the document ends early (truncated?)")
            cut_index, cut = len(marks) - 1, len(data)
        else:
            safe = np.flatnonzero(after <= 2)
            if not len(safe):  # one event larger than the buffer: wait for twice as much
                if len(after) and after.max() > MAX_DEPTH:
                    raise ScanError(
                        f"an event of over {len(data) >> 20} MiB nests deeper than "
                        f"{DECODE_STACK} levels near byte {self.offset}"
                    )
                if len(data) > EVENT_LIMIT:
                    raise ScanError(
                        f"{len(data) >> 20} MiB of text hold no complete event near byte "
                        f"{self.offset} (the limit is {EVENT_LIMIT >> 20} MiB)"
                    )
                self._threshold = 2 * len(data)
                return None
            cut_index = int(safe[-1])
            cut = int(marks[cut_index]) + 1
            self._threshold = SCAN_BYTES
        if len(after) and after.min() < 0:
            raise ScanError(f"a bracket closes what was never opened, near byte {self.offset}")
        n = cut_index + 1
        batch = self._walk(data, marks[:n], chars[:n], before[:n], after[:n], cut)
        self._depth = int(after[cut_index]) if n else self._depth
        del self._pending[:cut]
        self.offset += cut
        return batch

    def _walk(self, data, marks, chars, before, after, cut) -> Batch | None:
        """Split `data[:cut]` into top-level text (kept in `top`) and events."""
        top_level = np.flatnonzero((before <= 1) | (after <= 1))
        pieces: list[tuple[int, int]] = []  # event regions [start, stop)
        seg = 0  # start of the current top-level text or event region
        for k in top_level.tolist():
            pos, ch = int(marks[k]), int(chars[k])
            if before[k] == 0 and ch == _OPEN_ARR:
                raise ScanError("the document is a bare JSON array, not a Kineto trace object")
            if self._in_events:
                if before[k] == 2 and after[k] == 1:  # the `]` closing traceEvents
                    pieces.append((seg, pos))
                    self._in_events = False
                    seg = pos
                continue
            if before[k] == 1 and after[k] == 2 and ch == _OPEN_ARR:
                self.top += data[seg:pos]
                seg = pos
                if _EVENTS_KEY.search(self.top[-256:]) and not self.events_seen:
                    self.top += b"["
                    self._in_events = self.events_seen = True
                    seg = pos + 1
        if self._in_events:
            pieces.append((seg, cut))
        else:
            self.top += data[seg:cut]
        if not pieces:
            return None
        starts, ends = [], []
        for lo, hi in pieces:
            inside = (marks >= lo) & (marks < hi)
            opening = inside & (before == 2) & (after == 3)
            if np.any(opening & (chars == _OPEN_ARR)):
                raise ScanError("traceEvents holds an array where an event object belongs")
            starts.append(marks[opening])
            ends.append(marks[inside & (before == 3) & (after == 2)] + 1)
        starts_all, ends_all = np.concatenate(starts), np.concatenate(ends)
        if len(starts_all) != len(ends_all):
            raise ScanError(f"an event is not closed near byte {self.offset}")
        return Batch(data, starts_all, ends_all) if len(starts_all) else None
