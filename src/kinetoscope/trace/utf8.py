"""Bytes that are not UTF-8, refused with one message under every msgspec.

Before 0.23, msgspec let Python decode each string it kept, so such bytes raised
`UnicodeDecodeError`, which names the byte. From 0.23 it checks them itself and
raises `msgspec.DecodeError("Invalid UTF-8 encoded string")`, with no position,
which the readers would take for a wrong cut between events or for malformed
JSON. `strict_utf8` turns the second into the first, so every reader refuses such
a file with the same line whichever msgspec is installed. Strings the decoder
skips (fields no struct holds) are checked by neither version; `slice` repairs
those where it copies them (`slicing.write.valid_json_text`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

import msgspec

T = TypeVar("T")

#: how msgspec 0.23 and later word a string that is not UTF-8
_REFUSAL = "Invalid UTF-8"


def strict_utf8(decode: Callable[[bytes | bytearray | memoryview], T], text) -> T:
    """`decode(text)`; text that is not UTF-8 raises `UnicodeDecodeError` (at the
    first bad byte of `text`) rather than msgspec's positionless `DecodeError`."""
    try:
        return decode(text)
    except msgspec.DecodeError as exc:
        if str(exc).startswith(_REFUSAL):
            bytes(text).decode("utf-8")  # raises, naming the byte
        raise


def utf8_problem(exc: UnicodeDecodeError) -> str:
    """What is wrong with bytes that are not UTF-8, in the readers' words."""
    return f"is not valid UTF-8 text ({exc.reason}: byte 0x{exc.object[exc.start]:02x})"
