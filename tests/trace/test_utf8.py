"""Bytes that are not UTF-8 are one refusal under every msgspec (trace/utf8.py).

msgspec 0.23 began to raise `DecodeError("Invalid UTF-8 encoded string")` where
earlier versions raised `UnicodeDecodeError`; the readers took the new error for a
wrong cut and said "internal error" (CI at c1c3b2c). These tests pin both
behaviours whichever version is installed."""

import msgspec
import pytest

from kinetoscope.trace.schema import STRICT_BATCH, TOP_DECODER, TOP_KEYS
from kinetoscope.trace.utf8 import JSON_ANY, strict_utf8, utf8_problem

TEXT = b'[{"name": "aten::\xff"}]'


def _as_msgspec_023(text):
    raise msgspec.DecodeError("Invalid UTF-8 encoded string")


def _as_msgspec_022(text):
    return bytes(text).decode("utf-8")


@pytest.mark.parametrize("decode", [_as_msgspec_023, _as_msgspec_022, msgspec.json.decode])
def test_a_string_that_is_not_utf8_names_its_byte_under_either_msgspec(decode):
    """The byte is named; where it is counted from differs (0.22 counts from the
    string's start), so only the simulations check the offset."""
    with pytest.raises(UnicodeDecodeError) as caught:
        strict_utf8(decode, memoryview(TEXT))
    if decode is not msgspec.json.decode:
        assert caught.value.start == TEXT.index(b"\xff")
    assert utf8_problem(caught.value) == "is not valid UTF-8 text (invalid start byte: byte 0xff)"


def test_other_decode_errors_pass_through_unchanged():
    with pytest.raises(msgspec.DecodeError, match="truncated"):
        strict_utf8(msgspec.json.decode, b'[{"name": ')
    with pytest.raises(msgspec.ValidationError):
        strict_utf8(msgspec.json.Decoder(list[int]).decode, b'["x"]')


def test_text_python_reads_as_utf8_keeps_msgspecs_error():
    """A refusal the bytes do not bear out is not turned into a UTF-8 error."""
    with pytest.raises(msgspec.DecodeError, match="Invalid UTF-8"):
        strict_utf8(_as_msgspec_023, b'["fine"]')


@pytest.mark.parametrize(
    ("decoder", "text"),
    [
        (STRICT_BATCH, TEXT),
        (JSON_ANY, TEXT),
        (TOP_DECODER, b'{"traceName": "\xff", "traceEvents": []}'),
        (TOP_KEYS, b'{"trace\xff": 1}'),  # values are kept as text: a key
    ],
    ids=["events", "any", "top", "top_keys"],
)
def test_the_readers_decoders_refuse_bytes_not_utf8_as_python_does(decoder, text):
    """The decoders every reader uses are strict themselves, not each call site."""
    with pytest.raises(UnicodeDecodeError):
        decoder.decode(text)
