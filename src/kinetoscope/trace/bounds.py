"""What reading one trace may cost: text that cannot be a trace is refused early.

The streaming decoder holds only the text it has not yet cut into events, so its
memory follows the largest unfinished piece, not the file. Three kinds of input
defeat that, and each is stopped here by what a Kineto trace is, not by a size
tuned to the corpus:

- text that stops being JSON early (`yes "{"`, binary noise): a prefix of valid
  JSON is always reported by the parser as *truncated*; any other parse error
  in a prefix is final. The text held so far is checked each time it doubles
  from `CHECK_FROM`, so checking stays linear in the input and a broken stream
  is refused after about a MiB instead of filling the memory;
- one "event" without end: Kineto writes small events (names, ids, a stack
  frame: kilobytes at most); text that has grown past `EVENT_LIMIT` without one
  event boundary is not an event stream;
- a decompression bomb: deflate cannot compress better than about 1032:1
  (258-byte matches of a few bits). Event text compresses far less, because
  every event carries its own timestamp digits: the corpus tops at 30:1, and
  two million generated tiny events with counting timestamps compress 12-38:1
  (three event shapes, zlib level 9). Only text repeated verbatim (filler,
  whitespace, one event copied without change) nears the ceiling; text
  inflating more than `RATIO_LIMIT`:1 over its first `RATIO_FROM` bytes is
  refused before the rest is inflated.
"""

from __future__ import annotations

import msgspec

from ..errors import TraceError
from .utf8 import JSON_ANY

#: text held (head or unfinished event) at which the first validity check runs
CHECK_FROM = 1 << 20
#: text without an event boundary after which the input is refused
EVENT_LIMIT = 256 << 20
#: inflated-to-compressed ratio above which a gzip stream is refused (deflate's own
#: ceiling is about 1032:1), judged once `RATIO_FROM` bytes of text came out
RATIO_LIMIT = 500
RATIO_FROM = 64 << 20
_TRUNCATED = "truncated"


class PrefixCheck:
    """Checks a growing buffer (the start of a JSON value) each time it doubles."""

    def __init__(self, path: str, opening: bytes = b"") -> None:
        self.path = path
        self.opening = opening  # what precedes the buffer in the text (e.g. `[`)
        self.due = CHECK_FROM

    def __call__(self, buffer: bytearray) -> None:
        """Raise `TraceError` when `buffer` can no longer become valid JSON, or
        has grown past `EVENT_LIMIT` without being cut into events."""
        if len(buffer) < self.due:
            return
        self.due = 2 * len(buffer)
        if len(buffer) > EVENT_LIMIT:
            raise TraceError(
                self.path,
                f"holds {len(buffer) >> 20} MiB of text without an event boundary "
                f"(the limit is {EVENT_LIMIT >> 20} MiB): not a trace's event stream",
            )
        problem = prefix_problem(self.opening + buffer if self.opening else buffer)
        if problem is not None:
            raise TraceError(self.path, problem)


def prefix_problem(text: bytes | bytearray) -> str | None:
    """Why `text` cannot be the start of a JSON document, or None when it can."""
    try:
        JSON_ANY.decode(text)
    except msgspec.DecodeError as exc:
        message = str(exc).splitlines()[0]
        if _TRUNCATED in message or "trailing characters" in message:
            return None
        return f"is not valid JSON ({message[:160]})"
    except RecursionError:
        return "has values nested too deeply to decode"
    return None


def check_ratio(path: str, produced: int, consumed: int) -> None:
    """Refuse a gzip stream that inflates like a bomb (see the module docstring)."""
    if produced >= RATIO_FROM and produced > RATIO_LIMIT * max(consumed, 1):
        raise TraceError(
            path,
            f"inflates over {RATIO_LIMIT}:1 ({produced >> 20} MiB of text from the first "
            f"{consumed >> 10} KiB; trace text stays far below {RATIO_LIMIT}:1): "
            "a decompression bomb, not a trace",
        )
