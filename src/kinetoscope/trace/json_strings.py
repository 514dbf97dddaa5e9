"""Where JSON strings are in raw trace bytes, without parsing: one scanner for all.

Kineto traces carry Python reprs and stack frames in `args`, so structural text
(`},{`, braces, brackets) is common inside strings. Both the loader (finding a
cut between events when its quick guesses land inside strings) and `slice`
(the span of every event in streamed text) need to tell the two apart. They use
this one rule, the one a JSON parser follows: a `"` preceded by an odd run of
backslashes does not open or close a string; a byte lies outside strings when
an even number of real quotes precede it. Vectorised with numpy, so a scan is a
few passes over the bytes in C.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator

import numpy as np

_QUOTE, _BACKSLASH, _CLOSE_OBJ = 34, 92, 125
#: the end of one event object and the start of the next: `}` `,` `{` with whitespace
EVENT_BOUNDARY = re.compile(rb"\}[ \t\r\n]*,[ \t\r\n]*\{")
#: the bytes that can follow a boundary's `}`
_NEXT = np.frombuffer(b", \t\r\n", np.uint8)


def unescaped_quotes(raw: np.ndarray) -> np.ndarray:
    """Positions of `"` that open or close a string: not preceded by an odd run of `\\`."""
    quotes = np.flatnonzero(raw == _QUOTE)
    if not len(quotes):
        return quotes
    candidates = quotes[quotes > 0]
    candidates = candidates[raw[candidates - 1] == _BACKSLASH]
    if not len(candidates):
        return quotes
    # the length of the backslash run before each candidate, from the runs of consecutive
    # backslash positions (one pass: a round per backslash took 100 s on a 1 MB run)
    slashes = np.flatnonzero(raw == _BACKSLASH)
    starts = np.ones(len(slashes), bool)
    starts[1:] = np.diff(slashes) != 1
    first = np.maximum.accumulate(np.where(starts, np.arange(len(slashes)), 0))
    last = np.searchsorted(slashes, candidates - 1)  # the backslash just before the quote
    run = last - first[last] + 1
    escaped = candidates[(run & 1) == 1]
    return np.setdiff1d(quotes, escaped, assume_unique=True)


def outside_strings(quotes: np.ndarray, positions: np.ndarray) -> np.ndarray:
    """Which of `positions` (sorted) lie outside strings, given `unescaped_quotes`
    of text that starts outside any string."""
    return (np.searchsorted(quotes, positions) & 1) == 0


class OutsideStrings:
    """Which bytes lie outside strings in a text read a block at a time.

    Whole-text arrays (every quote, every backslash, every bracket position as int64)
    grow to several times the text on hostile input: a 90 MB string of backslashes
    took `slice` to a MemoryError over a 680 MiB array, one of `},{` past 1.2 GB (the
    extended fuzz run, 2026-11-29). The state at the end of a block (inside a string
    or not, and whether an odd run of backslashes ends there) carries over to the next,
    so a scan's arrays are a block's whatever the text holds."""

    #: bytes per block: the arrays of one block are a few times this
    BLOCK = 1 << 20

    def __init__(self) -> None:
        self.in_string = False  # at the end of the blocks seen, the text starting outside
        self.odd_slashes = False  # an odd run of `\\` ends the blocks seen

    def keep(self, block: np.ndarray, positions: np.ndarray) -> np.ndarray:
        """Those of `positions` (sorted, in `block`: the next bytes of the text, none of
        them a quote) that lie outside strings; the state then moves past `block`."""
        lead = int(self.odd_slashes)  # one `\\` standing for the run before the block
        raw = np.concatenate((np.full(lead, _BACKSLASH, np.uint8), block)) if lead else block
        quotes = unescaped_quotes(raw) - lead
        kept = positions[((np.searchsorted(quotes, positions) + self.in_string) & 1) == 0]
        self.in_string ^= bool(len(quotes) & 1)
        from_end = raw[::-1] != _BACKSLASH
        run = int(from_end.argmax()) if from_end.any() else len(raw)  # `\\`s ending it
        self.odd_slashes = bool(run & 1)
        return kept

    def blocks(
        self, raw: np.ndarray, hits: Callable[[np.ndarray], np.ndarray]
    ) -> Iterator[np.ndarray]:
        """Block by block of `raw` (the next bytes of the text), the positions in `raw`
        where `hits(block)` is true that lie outside strings."""
        for start in range(0, len(raw), self.BLOCK):
            block = raw[start : start + self.BLOCK]
            yield self.keep(block, np.flatnonzero(hits(block))) + start

    def marks(self, raw: np.ndarray, wanted: tuple[int, ...]) -> np.ndarray:
        """Positions in `raw` (the next bytes of the text) of the bytes in `wanted`
        that lie outside strings."""
        found = list(self.blocks(raw, lambda block: np.isin(block, wanted)))
        return np.concatenate(found) if found else np.empty(0, np.intp)


class BoundaryScan:
    """The last event boundary (`},{`) outside strings in a text that grows at its end,
    each byte scanned once (`OutsideStrings`).

    The loader falls back on it when its quick guesses land inside strings. Scanning
    the whole unfinished event again at every chunk was quadratic in time, and its
    arrays grew to several times the text: one 93 MB string of `},{` took `chain` past
    1.2 GB and a MemoryError (the extended fuzz run, 2026-11-29)."""

    def __init__(self) -> None:
        self.upto = 0  # text[:upto] scanned; the text starts outside any string
        self.state = OutsideStrings()
        self.found: tuple[int, int] | None = None  # the last boundary in text[:upto]

    def last(self, text: bytes | bytearray, end: int) -> tuple[int, int] | None:
        """(end of an event, start of the next) for the last `},{` outside strings whose
        `}` lies before `end`; text after `end` only completes a boundary's `,{`."""
        if self.upto >= end:
            return self.found
        with memoryview(text) as view:
            raw = np.frombuffer(view[self.upto : end], np.uint8)
            for closes in self.state.blocks(raw, lambda block: block == _CLOSE_OBJ):
                after = closes + 1  # a `}` that ends the text scanned is tried as it is
                ends = after >= len(raw)
                closes = closes[ends | np.isin(raw[np.where(ends, 0, after)], _NEXT)]
                for pos in (closes[::-1] + self.upto).tolist():
                    match = EVENT_BOUNDARY.match(text, pos)
                    if match:
                        self.found = pos + 1, match.end() - 1
                        break
            del raw
        self.upto = end
        return self.found
