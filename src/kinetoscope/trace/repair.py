"""Repairs of JSON text that a decoder refuses but that still holds a readable trace.

Each repair keeps the text's length, so every byte offset computed on the
original (event boundaries, the array's end, "truncated at byte N") still
holds on the repaired text, and each says how many places it changed so the
loader can warn (the trust grade shows it):

- `flatten_deep`: a value holding anything nested deeper than `MAX_DEPTH`
  levels is replaced by `null` and spaces. The decoder recurses once per level
  and the interpreter stops it near 1,000; no field a trace's analysis reads
  is deeper than 4 levels, so one such value is dropped and the rest of the
  trace is read.
- `replace_lone_surrogates`: `\\ud800` without its low half (or a low half
  alone) is how Python's `json.dumps` writes a string holding an unpaired
  surrogate (a file name decoded with `surrogateescape`, say); it is not a
  character, msgspec refuses it, and `\\ufffd` (U+FFFD, the replacement
  character) is the same six bytes.

And one repair of decoded events: `drop_big_ints`, for integers the decoder
reads but no int64 column can hold.
"""

from __future__ import annotations

import re

import msgspec
import numpy as np

from .json_strings import outside_strings, unescaped_quotes
from .schema import ARG_FIELDS

#: levels kept (the event array is level 1, an event 2, `args` 3, an arg's value 4)
MAX_DEPTH = 64
_OPEN = (91, 123)  # [ {
_CLOSE = (93, 125)  # ] }
#: a `\uXXXX` surrogate escape preceded by an even run of backslashes (a real escape)
_SURROGATE = re.compile(
    rb"(?<!\\)((?:\\\\)*)"
    rb"(\\u[dD][89abAB][0-9a-fA-F]{2}(?:\\u[dD][c-fC-F][0-9a-fA-F]{2})?|\\u[dD][c-fC-F][0-9a-fA-F]{2})"
)
_HAS_SURROGATE = re.compile(rb"\\u[dD][89a-fA-F]")


def flatten_deep(
    text: bytes | bytearray, value_level: int = 4, limit: int = MAX_DEPTH
) -> tuple[bytes, int]:
    """`text` with each value at level `value_level` (4: an arg's value, when `text`
    is an array of events) that holds anything below level `limit` replaced by
    `null` and spaces (same length); and how many were replaced."""
    raw = np.frombuffer(text, np.uint8)
    marks = np.flatnonzero(np.isin(raw, _OPEN + _CLOSE))
    marks = marks[outside_strings(unescaped_quotes(raw), marks)]
    opens = np.isin(raw[marks], _OPEN)
    after = np.cumsum(np.where(opens, 1, -1))
    deep = marks[opens & (after == limit + 1)]
    if not len(deep):
        return bytes(text), 0
    tops = marks[opens & (after == value_level)]
    ends = marks[~opens & (after == value_level - 1)]
    # the value holding each deep container: the last one opened before it
    holders = np.unique(tops[np.searchsorted(tops, deep) - 1])
    out = bytearray(text)
    for start, k in zip(holders.tolist(), np.searchsorted(ends, holders).tolist(), strict=True):
        stop = int(ends[k]) + 1 if k < len(ends) else len(out)  # never closed: to the end
        out[start:stop] = b"null" + b" " * (stop - start - 4)
    return bytes(out), len(holders)


def replace_lone_surrogates(text: bytes | bytearray) -> tuple[bytes, int]:
    """`text` with each unpaired `\\uD800`-`\\uDFFF` escape made `\\ufffd` (same
    length); and how many were replaced. In place in one copy, a match at a time: a
    `re.sub` held a piece per match, and a 90 MB string of `\\ud800` ran `slice` out of
    its 1.5 GiB (the extended fuzz run, 2026-11-29)."""
    if not _HAS_SURROGATE.search(text):
        return bytes(text), 0
    count, out = 0, bytearray(text)
    for match in _SURROGATE.finditer(text):
        if len(match.group(2)) == 12:  # a high and a low half: one proper character
            continue
        out[match.start(2) : match.end(2)] = b"\\ufffd"
        count += 1
    return bytes(out), count


#: every ASCII digit to "0" (no other byte is "0"): a run of 19 digits becomes _ZEROS
_DIGITS_TO_ZERO = bytes.maketrans(b"123456789", b"0" * 9)
_ZEROS = b"0" * 19
_ZERO_RUN = re.compile(rb"0+")
#: 2**63, the first integer past int64, as 19 ASCII digits
_PAST_INT64 = str(2**63).encode()
_POINT = ord(".")


def has_big_int(text: bytes | bytearray) -> bool:
    """Whether `text` may hold an integer outside int64: a run of 20 or more ASCII digits,
    or of 19 at or over 2**63, that does not follow a decimal point (digits after a point
    are a fraction, never an integer). Real traces hold 19-digit runs that are none of
    these (a bandwidth of 0.0013851614578824344, int64's own maximum as a `Concrete
    Inputs` string), and each sent its whole batch through `drop_big_ints`' Python loop.
    Runs are found without `re`, which tries up to 19 digits at every position of
    digit-heavy JSON (2.1 s CPU per 206 MB, the largest part of decoding): a translate
    and a substring search take 0.14 s."""
    zeros = text.translate(_DIGITS_TO_ZERO)
    start = zeros.find(_ZEROS)
    while start >= 0:  # the start of a maximal run: the search resumes after the last
        end = _ZERO_RUN.match(zeros, start).end()
        fraction = start > 0 and text[start - 1] == _POINT
        if not fraction and (end - start > 19 or bytes(text[start:end]) >= _PAST_INT64):
            return True
        start = zeros.find(_ZEROS, end)
    return False


_INT_ARGS = [attr for attr, _, typ, _ in ARG_FIELDS if typ == int | None]
#: numbers read as float columns (flops, occupancy): an int there is dropped only where
#: no float holds it (2**1024 and up); a flops of 2**70 is a count like any other
_NUMBER_ARGS = [attr for attr, _, typ, _ in ARG_FIELDS if typ == int | float | None]
_DEFAULTS = {attr: default for attr, _, _, default in ARG_FIELDS}
_LIST_ARGS = ("grid", "block")


def drop_big_ints(batch: list) -> int:
    """Replace each `args` integer outside int64 (an id, a byte count of 2**70), or
    outside a float's range where a float is read (flops), by its default (absent);
    how many were dropped. Only called when the text may hold such an integer
    (`has_big_int`), so a normal batch costs one scan."""
    dropped = 0
    for ev in batch:
        args = ev.args
        if args is None:
            continue
        changes = {}
        for attr in _INT_ARGS:
            value = getattr(args, attr)
            if value.__class__ is int and not -(2**63) <= value < 2**63:
                changes[attr] = _DEFAULTS[attr]
        for attr in _NUMBER_ARGS:
            value = getattr(args, attr)
            if value.__class__ is int and value.bit_length() > 1024:
                changes[attr] = _DEFAULTS[attr]
        for attr in _LIST_ARGS:
            value = getattr(args, attr)
            if isinstance(value, list) and any(
                x.__class__ is int and not -(2**63) <= x < 2**63 for x in value
            ):
                changes[attr] = None
        if changes:
            dropped += len(changes)
            ev.args = msgspec.structs.replace(args, **changes)
    return dropped


#: the loader's warning for each repair, by kind, given the count so far
REPAIR_WARNINGS = {
    "deep": f"{{}} value(s) nested more than {MAX_DEPTH} levels deep were dropped (read as null)",
    "surrogates": "{} unpaired UTF-16 surrogate escape(s) were replaced by U+FFFD",
    "big_ints": "{} integer(s) in args beyond the 64-bit range were dropped (read as absent)",
}

#: what the load warnings that report changed or dropped data say (`changes_data`)
_CHANGED = (
    "were dropped (read as",  # REPAIR_WARNINGS: deep values, big ints
    "replaced by U+FFFD",  # REPAIR_WARNINGS: surrogates
    "gzip trailer",  # source.py: CRC-32 or length does not match
    "after the end of the gzip data",  # source.py: bytes after the last member
    "were not read as steps",  # steps.py: ProfilerStep#N with 19+ digits
)


def changes_data(warning: str) -> bool:
    """True for a load warning saying the loader dropped or replaced something to
    read the file (the trust grade shows these; replacing raw control characters
    inside strings, which PyTorch writes, is not one)."""
    return any(marker in warning for marker in _CHANGED)
