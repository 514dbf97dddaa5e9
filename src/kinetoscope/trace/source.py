"""Turn a path into a stream of the trace's JSON bytes, tolerating what real files do.

The text is streamed in pieces of a few hundred kB so that neither the file nor its
decompressed text is ever held whole: the decoder turns each piece into columns
and drops it. Gzip is inflated by ISA-L (about 2x zlib's speed); a gzip stream
cut off early keeps every byte that was decompressed so the decoder can still
recover the complete events before the cut.

Inputs that are not regular files (`-` for stdin, a FIFO, a process
substitution `/dev/fd/N`) are read strictly front to back: never sized, sought
or opened twice, so nothing is consumed before the decoder sees it and reading
ends when the writer closes its end. Gzip is recognised by its magic bytes in
every case, whatever the name.
"""

from __future__ import annotations

import os
import stat
import sys
import time
from collections.abc import Iterator
from pathlib import Path

from isal import isal_zlib

from .. import progress
from ..errors import TraceError, input_name
from .bounds import check_ratio

#: bytes of text per step: as large as the decoder's pieces (decode.py `_PIECE`)
_READ = 256 << 10
_GZIP_READ = 256 << 10  # compressed bytes read per step
GZIP_MAGIC = b"\x1f\x8b"
_GZIP_HEADER = 10  # magic, method, flags, mtime (4), extra flags, OS
_DEFLATE = 8  # the only compression method gzip defines
#: what `load` and error messages call standard input
STDIN = "-"


def is_stdin(path: os.PathLike | str) -> bool:
    return str(path) == STDIN


def is_regular_file(path: os.PathLike | str) -> bool:
    """True for a regular file (or a link to one): it can be sized and read twice.

    False for stdin, FIFOs, process substitutions, devices and missing paths."""
    if is_stdin(path):
        return False
    try:
        return stat.S_ISREG(os.stat(path).st_mode)
    except OSError:
        return False


def trace_chunks(path: Path, warnings: list[str]) -> Iterator[bytes | memoryview]:
    """The decompressed JSON text of `path`, piece by piece; the file is never modified.

    `path` may be `-` (standard input), a FIFO or `/dev/fd/N`: those are read
    once, front to back. A piece may be a view of a buffer that the next piece
    overwrites: copy it (e.g. append it to a bytearray) before asking for the
    next one.

    Raises `TraceError` before the first piece for a missing, unreadable, empty
    or undecompressable input.
    """
    handle = _open(path)
    info = os.fstat(handle.fileno())
    if stat.S_ISREG(info.st_mode) and info.st_size == 0:
        handle.close()
        raise TraceError(path, "is empty")
    try:
        first = handle.read(_GZIP_HEADER)  # a pipe cannot be sought back: keep these bytes
    except OSError as exc:
        handle.close()
        raise TraceError(path, f"cannot be read ({exc.strerror or exc})") from None
    gzipped = first.startswith(GZIP_MAGIC)
    if gzipped:
        _check_gzip_header(first, path, handle)
        pieces = _gunzip(first, handle, path, warnings)
    else:
        pieces = _plain(handle, first)
    if stat.S_ISREG(info.st_mode) and info.st_size >= report_from(gzipped):
        return _reported(pieces, handle, info.st_size, path)
    return pieces


#: files this large say how far reading has got (`kinetoscope.progress`, silent unless
#: a command turned reporting on; load.py names the stage): about 50 MB of JSON, which
#: takes over 2 s on a loaded 2-core machine (a 229k-event trace took 7.4 s unannounced)
REPORT_FROM = 48 << 20


def report_from(gzipped: bool) -> int:
    """File size from which reading is reported: a trace's JSON gzips about 8-10x."""
    return REPORT_FROM // 8 if gzipped else REPORT_FROM


def _reported(pieces: Iterator, handle, size: int, path: Path) -> Iterator:
    """`pieces`, with the file bytes read so far reported at most 4 times a second."""
    due = time.monotonic()
    for piece in pieces:
        yield piece
        if time.monotonic() >= due and not handle.closed:
            due = time.monotonic() + 0.25
            read = handle.tell()
            what = f"reading {input_name(path)}: {read >> 20} of {size >> 20} MiB"
            progress.count(what, read, size)


def _open(path: Path):
    """A binary handle on the input, or `TraceError` saying why there is none."""
    if is_stdin(path):
        return os.fdopen(os.dup(sys.stdin.fileno()), "rb")
    try:
        mode = os.stat(path).st_mode
    except FileNotFoundError:
        raise TraceError(path, "no such file") from None
    except OSError as exc:
        raise TraceError(path, f"cannot be read ({exc.strerror or exc})") from None
    if stat.S_ISDIR(mode):
        raise TraceError(path, "is a directory, not a trace file")
    try:
        return open(path, "rb")  # noqa: SIM115 (closed by the generator that reads it)
    except OSError as exc:
        raise TraceError(path, f"cannot be read ({exc.strerror or exc})") from None


def _check_gzip_header(first: bytes, path: Path, handle) -> None:
    """Name what is wrong with a gzip header instead of letting the inflater guess."""
    problem = None
    if len(first) < _GZIP_HEADER:
        problem = f"is a gzip file cut off inside its 10-byte header ({len(first)} bytes)"
    elif first[2] != _DEFLATE:
        problem = f"has a corrupt gzip header: compression method {first[2]}, not 8 (deflate)"
    elif first[3] & 0xE0:
        problem = f"has a corrupt gzip header: reserved flag bits set (flags 0x{first[3]:02x})"
    if problem is not None:
        handle.close()
        raise TraceError(path, problem)


def _plain(handle, first: bytes = b"", stop: int | None = None) -> Iterator[bytes | memoryview]:
    """`first` (bytes already read to look for the gzip magic), then the rest.

    Reads into one reused buffer: a fresh 1 MB `bytes` per read costs page faults
    (large blocks are mmap'd and unmapped each time), about 5x the read itself.
    Each piece is only valid until the next one; the decoder copies it at once.
    With `stop`, reading ends at that byte of the file."""
    buffer = bytearray(_READ)
    view = memoryview(buffer)
    left = stop - handle.tell() if stop is not None else None
    with handle:
        if first:
            yield first
        while size := handle.readinto(buffer if left is None or left >= _READ else view[:left]):
            yield view[:size]
            if left is not None:
                left -= size


def plain_range(path: Path, start: int, stop: int | None = None) -> Iterator[memoryview]:
    """Bytes `start` to `stop` (the end when None) of an uncompressed file, piece by
    piece, under the same rules as `trace_chunks` (for a split load)."""
    handle = open(path, "rb")  # noqa: SIM115 (closed by the generator)
    handle.seek(start)
    return _plain(handle, stop=stop)


def _gunzip(first: bytes, handle, path: Path, warnings: list[str]) -> Iterator[bytes]:
    """Stream-decompress (concatenated members too), at most `_READ` bytes out per
    step whatever the compression ratio, keeping the output of a stream that
    ends early or turns corrupt; `first` is the header already read.

    The last 8 bytes read are held back until more come or the input ends, so a
    member's trailer (CRC-32 and length) is checked only after every byte of its
    text was handed on: a wrong trailer costs a warning, not the text. Bytes
    after the last member are ignored with a warning (zero padding, which tape
    and block devices add, without one)."""
    gunzip = _Members(warnings)
    pending = first
    consumed = len(first)
    with handle:
        while True:
            more = handle.read(_GZIP_READ)
            consumed += len(more)
            pending += more
            feed, pending = (pending, b"") if not more else (pending[:-8], pending[-8:])
            try:
                for text in gunzip.feed(feed):
                    yield text
                    check_ratio(path, gunzip.produced, consumed)
            except isal_zlib.error as exc:
                gunzip.failed(exc, path)
                return
            if not more:
                break
    gunzip.finish(path, consumed)


class _Members:
    """The gzip members of one input, inflated in turn, and what follows them."""

    def __init__(self, warnings: list[str]) -> None:
        self.warnings = warnings
        self.inflater = isal_zlib.decompressobj(31)
        self.produced = 0  # text bytes handed on
        self.after = bytearray()  # bytes after the last member that are not gzip

    def feed(self, data: bytes) -> Iterator[bytes]:
        if self.after:
            self.after += data
            return
        while data:
            out = self.inflater.decompress(data, _READ)
            data = self.inflater.unconsumed_tail
            if self.inflater.eof and self.inflater.unused_data:
                data = self.inflater.unused_data
                if not data.startswith(GZIP_MAGIC[: len(data)]):
                    self.after += data  # not another member: trailing bytes
                    data = b""
                else:  # the next member
                    self.inflater = isal_zlib.decompressobj(31)
            self.produced += len(out)
            yield out

    def failed(self, exc: Exception, path: Path) -> None:
        """Corrupt data: the text before it is kept, with a warning saying so."""
        message = str(exc)
        if "checksum" in message or "length" in message:  # the trailer, after all the text
            self.warnings.append(
                f"the gzip trailer's CRC-32 or length does not match the text ({message}); "
                f"all {self.produced} bytes of text were read"
            )
            return
        if not self.produced:
            raise TraceError(path, f"has corrupt gzip data before any trace text ({message})")
        self.warnings.append(f"gzip data is corrupt after {self.produced} bytes ({message})")

    def finish(self, path: Path, consumed: int) -> None:
        if self.after:
            if self.after.count(0) != len(self.after):
                self.warnings.append(
                    f"{len(self.after)} bytes after the end of the gzip data were ignored"
                )
            return
        if not self.inflater.eof:
            if not self.produced:
                raise TraceError(
                    path,
                    f"is a gzip stream cut off before any trace text ({consumed} compressed bytes)",
                )
            self.warnings.append("gzip stream ends early (file truncated)")
