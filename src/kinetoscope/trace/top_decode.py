"""Decoding a whole trace text at once, with repairs: the fallback for files whose
head is not what Kineto writes. Raw control characters inside strings are
replaced, and a truncated file keeps the complete events before the cut.
"""

from __future__ import annotations

import re

import msgspec

from ..errors import TraceError
from .schema import TOP_DECODER, TopLevel

CONTROL_TABLE = bytes.maketrans(bytes(range(32)), b" " * 32)
CONTROL_RE = re.compile(rb"[\x00-\x1f]")
CONTROL_WARNING = "raw control characters inside strings were replaced by spaces"


def decode_top(data: bytes, path: str, warnings: list[str]) -> TopLevel:
    """Decode the whole top-level object, repairing control characters and truncation."""
    try:
        return decode_top_checked(data, path)
    except msgspec.DecodeError as first:
        error = first
    if CONTROL_RE.search(data):
        cleaned = data.translate(CONTROL_TABLE)
        try:
            top = decode_top_checked(cleaned, path)
        except msgspec.DecodeError as second:
            data, error = cleaned, second
        else:
            warnings.append(CONTROL_WARNING)
            return top
    recovered = recover_truncated(data, path)
    if recovered is None:
        raise TraceError(path, f"is not valid JSON ({short_error(error)})")
    top, lost_at = recovered
    count = len(top.traceEvents or [])
    warnings.append(
        f"file is truncated at byte {lost_at}: recovered {count} complete events before the cut"
    )
    return top


def decode_top_checked(data: bytes, path: str) -> TopLevel:
    try:
        return TOP_DECODER.decode(data)
    except msgspec.ValidationError as exc:
        raise TraceError(path, f"is not a Kineto trace ({short_error(exc)})") from None


def short_error(exc: Exception) -> str:
    return str(exc).splitlines()[0][:160]


def recover_truncated(data: bytes, path: str) -> tuple[TopLevel, int] | None:
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
            return TOP_DECODER.decode(candidate), end + 1
        except (msgspec.DecodeError, msgspec.ValidationError):
            continue
    return None
