"""Turn a path into a stream of the trace's JSON bytes, tolerating what real files do.

The text is streamed in pieces of a few hundred kB so that neither the file nor its
decompressed text is ever held whole: the decoder turns each piece into columns
and drops it. Gzip is inflated by ISA-L (about 2x zlib's speed); a gzip stream
cut off early keeps every byte that was decompressed so the decoder can still
recover the complete events before the cut.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

from isal import isal_zlib

from ..errors import TraceError

#: bytes of text per step: as large as the decoder's pieces (decode.py `_PIECE`)
_READ = 256 << 10
_GZIP_READ = 256 << 10  # compressed bytes read per step
_GZIP_MAGIC = b"\x1f\x8b"


def trace_chunks(path: Path, warnings: list[str]) -> Iterator[bytes | memoryview]:
    """The decompressed JSON text of `path`, piece by piece; the file is never modified.

    A piece may be a view of a buffer that the next piece overwrites: copy it
    (e.g. append it to a bytearray) before asking for the next one.

    Raises `TraceError` before the first piece for a missing, unreadable,
    empty or undecompressable file.
    """
    if not path.exists():
        raise TraceError(path, "no such file")
    if path.is_dir():
        raise TraceError(path, "is a directory, not a trace file")
    try:
        handle = open(path, "rb")  # noqa: SIM115 (closed by the generator below)
    except PermissionError as exc:
        raise TraceError(path, f"cannot be read ({exc.strerror})") from None
    if os.fstat(handle.fileno()).st_size == 0:
        handle.close()
        raise TraceError(path, "is empty")
    gzipped = handle.read(2) == _GZIP_MAGIC
    handle.seek(0)
    return _gunzip(handle, path, warnings) if gzipped else _plain(handle)


def _plain(handle, stop: int | None = None) -> Iterator[memoryview]:
    """Read into one reused buffer: a fresh 1 MB `bytes` per read costs page faults
    (large blocks are mmap'd and unmapped each time), about 5x the read itself.
    Each piece is only valid until the next one; the decoder copies it at once.
    With `stop`, reading ends at that byte of the file."""
    buffer = bytearray(_READ)
    view = memoryview(buffer)
    left = stop - handle.tell() if stop is not None else None
    with handle:
        while size := handle.readinto(buffer if left is None or left >= _READ else view[:left]):
            yield view[:size]
            if left is not None:
                left -= size


def plain_range(path: Path, start: int, stop: int | None = None) -> Iterator[memoryview]:
    """Bytes `start` to `stop` (the end when None) of an uncompressed file, piece by
    piece, under the same rules as `trace_chunks` (for a split load)."""
    handle = open(path, "rb")  # noqa: SIM115 (closed by the generator)
    handle.seek(start)
    return _plain(handle, stop)


def _gunzip(handle, path: Path, warnings: list[str]) -> Iterator[bytes]:
    """Stream-decompress (concatenated members too), at most `_READ` bytes out per
    step whatever the compression ratio, keeping the output of a stream that
    ends early or turns corrupt."""
    inflater = isal_zlib.decompressobj(31)
    produced = 0
    with handle:
        try:
            while data := handle.read(_GZIP_READ):
                while data:
                    out = inflater.decompress(data, _READ)
                    data = inflater.unconsumed_tail
                    if inflater.eof and inflater.unused_data:  # next gzip member
                        data = inflater.unused_data
                        inflater = isal_zlib.decompressobj(31)
                    produced += len(out)
                    yield out
            tail = inflater.flush()
        except isal_zlib.error as exc:
            if not produced:
                raise TraceError(path, f"is not a valid gzip file ({exc})") from None
            warnings.append(f"gzip data is corrupt after {produced} bytes ({exc})")
            return
        produced += len(tail)
        yield tail
    if not inflater.eof:
        warnings.append("gzip stream ends early (file truncated)")
