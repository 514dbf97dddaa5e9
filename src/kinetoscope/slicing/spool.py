"""A stream `slice` must read twice (standard input, a FIFO, `/dev/fd/N`, a device),
copied as it is (still compressed) to a private temporary file, within bounds.

`kinetoscope slice /dev/zero` once wrote 7.7 GB to the temporary folder in 18 s:
the copy was made whole before anything looked at it, while every other command
refuses /dev/zero within a second. Now the copy's first `SNIFF_BYTES` are read the
way the loader reads them (`trace_chunks`, gzip inflated) and refused with the
loader's own message when the text does not start as JSON (or its second byte is one
JSON forbids there); the rest is copied only
up to `spool_cap()`: the free space of the temporary folder less `RESERVE_BYTES`,
at most `MAX_SPOOL_BYTES`. A stream past it is one line, and the copy is removed.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

from ..errors import TraceError, input_name
from ..trace.cuts import FIRST_BYTE
from ..trace.decode import BOM, NOT_JSON
from ..trace.source import is_stdin, trace_chunks

#: compressed bytes copied before the stream is judged
SNIFF_BYTES = 1 << 16
#: text looked at for the first byte that is not whitespace
_SNIFF_TEXT = 1 << 20
#: the most a stream is copied (a 5 GB trace gzips to about 500 MB)
MAX_SPOOL_BYTES = 8 << 30
#: free space left in the temporary folder whatever the stream
RESERVE_BYTES = 1 << 30
_BLOCK = 1 << 20


@contextlib.contextmanager
def spooled(path: Path) -> Iterator[Path]:
    """A private temporary copy of the stream `path`, removed on leaving; `TraceError`
    for a stream the loader would refuse at its first bytes, or longer than the cap."""
    fd, name = tempfile.mkstemp(prefix="kinetoscope-slice-", suffix=".input")
    copy = Path(name)
    try:
        with os.fdopen(fd, "wb") as sink, _open_stream(path) as source:
            head = source.read(SNIFF_BYTES)
            sink.write(head)
            sink.flush()
            _check_start(path, copy, complete=len(head) < SNIFF_BYTES)
            _copy_capped(path, source, sink, len(head), spool_cap(copy.parent))
        yield copy
    finally:
        copy.unlink(missing_ok=True)


def spool_cap(folder: Path) -> int:
    """Bytes a stream may take in `folder`."""
    return max(0, min(MAX_SPOOL_BYTES, shutil.disk_usage(folder).free - RESERVE_BYTES))


def _open_stream(path: Path):
    if is_stdin(path):
        return os.fdopen(os.dup(sys.stdin.fileno()), "rb")
    try:
        return open(path, "rb")  # noqa: SIM115 (closed by the caller's with)
    except OSError as exc:
        raise TraceError(path, f"cannot be read ({exc.strerror or exc})") from None


def _check_start(path: Path, copy: Path, complete: bool) -> None:
    """Refuse, as the loader does, text that starts with neither `{` nor `[` (/dev/zero,
    /dev/urandom), and text whose second byte JSON forbids there (`yes "{"`: an object
    opens with a key or closes); a gzip header the loader refuses is refused here too.
    Text that is only whitespace so far is left to the cap."""
    text = bytearray()
    try:
        pieces = iter(trace_chunks(copy, []))  # an empty stream or a bad gzip header raise here
        with contextlib.closing(pieces):
            while len(text) < _SNIFF_TEXT and (piece := next(pieces, None)) is not None:
                text += piece
                if _judged(path, text[len(BOM) :] if text.startswith(BOM) else text):
                    return
    except TraceError as exc:
        if exc.path == input_name(path) or complete or not text:  # not the cut ending the head
            raise TraceError(path, exc.problem) from None


#: what JSON allows after an opening `{` (a key, or the end) and `[` (a trace's event)
_SECOND = {b"{": (b'"', b"}"), b"[": (b"{", b"]")}


def _judged(path: Path, text: bytearray) -> bool:
    """True once the first two bytes that are not whitespace are seen and fit a trace;
    `TraceError` where they do not."""
    first = FIRST_BYTE.match(text)
    if first is None:
        return False
    if first.group(1) not in _SECOND:
        raise TraceError(path, NOT_JSON)
    second = FIRST_BYTE.match(text, first.end())
    if second is None:
        return False
    if second.group(1) not in _SECOND[first.group(1)]:
        shown = (first.group(1) + second.group(1)).decode("ascii", "backslashreplace")
        raise TraceError(path, f"is not a JSON trace (it starts {shown!r})")
    return True


def _copy_capped(path: Path, source, sink, copied: int, cap: int) -> None:
    while block := source.read(_BLOCK):
        copied += len(block)
        if copied > cap:
            raise TraceError(
                path,
                f"is a stream longer than {cap / (1 << 20):,.0f} MB, the most slice copies to a "
                "temporary file before reading it twice (save it to a file and slice that)",
            )
        sink.write(block)
