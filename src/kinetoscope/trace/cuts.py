"""Where the event array opens and where its text may be cut between events.

The streaming decoder and the split loader cut the array into pieces without
parsing it; a cut is a guess (`},{` also appears inside strings) that the
decoder checks, so these helpers only have to be right on valid JSON and fast.
"""

from __future__ import annotations

import re

import msgspec

from .json_strings import EVENT_BOUNDARY
from .repair import flatten_deep
from .schema import RAW_LIST, TOP_DECODER
from .utf8 import JSON_ANY

EVENTS_KEY = re.compile(rb'"traceEvents"[ \t\r\n]*:[ \t\r\n]*\[')
FIRST_BYTE = re.compile(rb"[ \t\r\n]*([^ \t\r\n])")
TRAILING_AT = re.compile(r"trailing characters \(byte (\d+)\)")


def head_is_top_level(head: bytes) -> bool:
    """True when `"traceEvents": [` found is a key of the top-level object."""
    try:
        TOP_DECODER.decode(head + b"]}")
    except (msgspec.DecodeError, msgspec.ValidationError):
        return False
    return True


def complete_array_end(text: bytes) -> int | None:
    """Where the array opening `text` closes, when the object's remaining keys follow."""
    try:
        return _complete_array_end(text)
    except RecursionError:  # a value too deep to decode: dropped, as the decoder does
        return _complete_array_end(flatten_deep(text)[0])


def _complete_array_end(text: bytes) -> int | None:
    try:
        RAW_LIST.decode(text)
    except msgspec.DecodeError as exc:
        at = TRAILING_AT.search(str(exc))
        if at is None:
            return None
        # msgspec reports where the trailing text starts; the array ends at the
        # last ']' before it (checked, so an off-by-one there cannot matter)
        end = text.rfind(b"]", 0, int(at.group(1))) + 1
        try:
            RAW_LIST.decode(text[:end])
        except msgspec.DecodeError:
            return None
        return end
    return None  # the array is not followed by the rest of the object


def bracketed(rest: bytearray, end: int) -> bytearray:
    """`[` + rest[:end] + `]` in one copy."""
    text = bytearray(b"[")
    with memoryview(rest) as view:
        text += view[:end]
    text += b"]"
    return text


def last_boundary(text: bytearray, before: int, after: int = 0) -> tuple[int, int] | None:
    """(end of an event, start of the next) for the last `},{` ending before `before`
    whose `}` lies at or after `after`."""
    pos = before
    while pos > after:
        pos = text.rfind(b"}", after, pos)
        if pos < 0:
            return None
        match = EVENT_BOUNDARY.match(text, pos)
        if match:
            return pos + 1, match.end() - 1
    return None


def events_head(text: bytes) -> bytes | None:
    """The text up to and including `"traceEvents": [` when `text`, the start of
    a file, opens the usual top-level object with it; else None."""
    first = FIRST_BYTE.match(text)
    if first is None or first.group(1) != b"{":
        return None
    match = EVENTS_KEY.search(text)
    if match is None:
        return None
    head = text[: match.end()]
    return head if head_is_top_level(head) else None


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
            JSON_ANY.decode(view[start:])
            return False  # the window ended exactly there: cannot tell
        except RecursionError:
            return False
        except msgspec.DecodeError as exc:
            at = TRAILING_AT.search(str(exc))
            if at is None:
                return False
            # msgspec's byte is near the trailing text; the object ends at the last
            # `}` before it (checked by decoding that much)
            end = text.rfind(b"}", start, start + int(at.group(1)) + 1) + 1
        try:
            value = JSON_ANY.decode(view[start:end])
        except (msgspec.DecodeError, RecursionError):
            return False
    after = FIRST_BYTE.match(text, end)
    return (
        isinstance(value, dict)
        and bool(value)
        and after is not None
        and after.group(1) in (b",", b"]")
    )
