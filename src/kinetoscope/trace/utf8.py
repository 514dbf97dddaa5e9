"""Bytes that are not UTF-8, refused with one message under every msgspec.

Before 0.23, msgspec let Python decode each string it kept, so such bytes raised
`UnicodeDecodeError`, which names the byte. From 0.23 it checks them itself and
raises `msgspec.DecodeError("Invalid UTF-8 encoded string")`, with no position,
which the readers would take for a wrong cut between events or for malformed
JSON. `strict_utf8` turns the second into the first, and every decoder of a user's
text is a `StrictDecoder` (`schema.py`, `JSON_ANY` here), so every reader refuses
such a file with the same line whichever msgspec is installed. Strings the decoder
skips (fields no struct holds) are checked by neither version; `slice` repairs
those where it copies them (`slicing.write.valid_json_text`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

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


class StrictDecoder:
    """A `msgspec.json.Decoder` of `kind` whose refusal of bytes that are not UTF-8 is
    `UnicodeDecodeError` under every msgspec (`strict_utf8`)."""

    __slots__ = ("_decode",)

    def __init__(self, kind: Any = Any) -> None:
        self._decode = msgspec.json.Decoder(kind).decode

    def decode(self, text):
        return strict_utf8(self._decode, text)


#: any JSON value, for the checks that only ask whether text decodes
JSON_ANY = StrictDecoder()


def utf8_problem(exc: UnicodeDecodeError) -> str:
    """What is wrong with bytes that are not UTF-8, in the readers' words."""
    return f"is not valid UTF-8 text ({exc.reason}: byte 0x{exc.object[exc.start]:02x})"
