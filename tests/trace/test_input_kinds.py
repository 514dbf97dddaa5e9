"""Every kind of input: regular files, gzip, FIFOs, `-` (stdin) and `/dev/fd/N`.

Pipes cannot be sized, sought or opened twice: whatever is read from them is
gone. These tests feed each kind from a writer that is still writing when the
loader starts, and check the result equals loading the same bytes from a file.
"""

from __future__ import annotations

import gzip
import os
import subprocess
import sys
import threading
from pathlib import Path

import pytest

import kinetoscope
from kinetoscope.errors import TraceError
from tests.capture_helpers import run_here
from tests.conftest import corpus

#: a generous guard against a hang (a reader blocked forever), not a speed check
HANG_GUARD_S = 120
TRACE = "gpu/triton_example.json.gz"


def _feed(target: str | Path | int, data: bytes) -> threading.Thread:
    """Write `data` into a FIFO path or a pipe's write end (an fd, closed when done)
    from another thread, in small pieces."""

    def write() -> None:
        try:
            with open(target, "wb") as out:
                for at in range(0, len(data), 4096):
                    out.write(data[at : at + 4096])
        except BrokenPipeError:  # the reader gave up early: the test says why
            pass

    thread = threading.Thread(target=write, daemon=True)
    thread.start()
    return thread


def _load_guarded(path: str | Path, **kwargs):
    """`kinetoscope.load(path)` in a thread, failing (not hanging) if it blocks."""
    result: dict = {}

    def run() -> None:
        try:
            result["trace"] = kinetoscope.load(path, **kwargs)
        except Exception as exc:  # noqa: BLE001 - handed to the test thread
            result["error"] = exc

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    thread.join(HANG_GUARD_S)
    assert not thread.is_alive(), f"loading {path} blocked for {HANG_GUARD_S} s"
    if "error" in result:
        raise result["error"]
    return result["trace"]


def _same(a, b) -> None:
    assert len(a) == len(b)
    assert a.names == b.names
    assert (a.ts == b.ts).all() and (a.dur == b.dur).all() and (a.lane == b.lane).all()
    assert a.warnings == b.warnings


@pytest.mark.parametrize("compressed", [True, False], ids=["gzip", "plain"])
@pytest.mark.parametrize("split_min_bytes", [None, 0], ids=["default", "split-forced"])
def test_fifo_is_read_as_a_stream(tmp_path, compressed, split_min_bytes):
    """A FIFO was opened once to sniff its size and magic (consuming those bytes
    and closing the writer's pipe), then again to read: it hung forever."""
    source = corpus(TRACE)
    data = source.read_bytes() if compressed else gzip.decompress(source.read_bytes())
    fifo = tmp_path / "trace.fifo"
    os.mkfifo(fifo)
    writer = _feed(fifo, data)
    trace = _load_guarded(fifo, split_min_bytes=split_min_bytes)
    writer.join(HANG_GUARD_S)
    _same(trace, kinetoscope.load(source))
    assert trace.path == str(fifo)


def test_dev_fd_of_a_pipe_is_read_as_a_stream():
    """Process substitution `<(zcat trace.json.gz)` hands the program /dev/fd/N."""
    source = corpus(TRACE)
    read_fd, write_fd = os.pipe()
    try:
        writer = _feed(write_fd, gzip.decompress(source.read_bytes()))
        trace = _load_guarded(f"/dev/fd/{read_fd}", split_min_bytes=0)
        writer.join(HANG_GUARD_S)
    finally:
        os.close(read_fd)
    _same(trace, kinetoscope.load(source))


@pytest.mark.parametrize("compressed", [True, False], ids=["gzip", "plain"])
def test_stdin_dash_plain_or_gzip(compressed):
    """`kinetoscope summary -` reads standard input; gzip is told by its magic bytes.
    A child reads it: standard input is then a real pipe (no size, no seeking, read once),
    which an in-memory stream is not. The same trace from its file runs in this process."""
    source = corpus(TRACE)
    data = source.read_bytes() if compressed else gzip.decompress(source.read_bytes())
    done = subprocess.run(
        [sys.executable, "-m", "kinetoscope", "summary", "-", "--format", "json"],
        input=data,
        capture_output=True,
        timeout=HANG_GUARD_S,
    )
    assert done.returncode == 0, done.stderr.decode()
    from_file = run_here("summary", source, "--format", "json")
    assert from_file.returncode == 0, from_file.stderr
    assert done.stdout.replace(b"<stdin>", str(source).encode()) == from_file.stdout.encode()


def test_empty_stdin_is_one_line_exit_2():
    """A child: standard input is a real, empty pipe."""
    done = subprocess.run(
        [sys.executable, "-m", "kinetoscope", "explain", "-"],
        input=b"",
        capture_output=True,
        timeout=HANG_GUARD_S,
    )
    assert done.returncode == 2
    assert done.stderr.decode().strip() == "kinetoscope: error: <stdin>: is empty"


def test_gzip_named_json_and_plain_named_gz_are_told_by_content(tmp_path):
    source = corpus(TRACE)
    gz_named_plain = tmp_path / "a.json.gz"
    gz_named_plain.write_bytes(gzip.decompress(source.read_bytes()))
    plain_named_gz = tmp_path / "b.json"
    plain_named_gz.write_bytes(source.read_bytes())
    _same(kinetoscope.load(gz_named_plain), kinetoscope.load(plain_named_gz))


@pytest.mark.parametrize(
    "content, message",
    [
        (b"\x1f\x8b\x08\x00", "gzip file cut off inside its 10-byte header (4 bytes)"),
        (b"\x1f\x8b\x09\x00" + b"\x00" * 60, "compression method 9, not 8 (deflate)"),
        (b"\x1f\x8b\x08\xe0" + b"\x00" * 60, "reserved flag bits set (flags 0xe0)"),
        (b"\x1f\x8b\x08\x00" + b"\x00" * 6 + b"\xff" * 60, "corrupt gzip data before any"),
    ],
)
def test_corrupt_gzip_header_says_what_is_wrong(tmp_path, content, message):
    path = tmp_path / "bad.json.gz"
    path.write_bytes(content)
    with pytest.raises(TraceError) as err:
        kinetoscope.load(path)
    assert message in str(err.value)
    assert "is empty" not in str(err.value)


def test_gzip_cut_right_after_its_header_is_not_called_empty(tmp_path):
    """The header is intact but no compressed block follows: it was cut off."""
    path = tmp_path / "cut.json.gz"
    path.write_bytes(corpus(TRACE).read_bytes()[:12])
    with pytest.raises(TraceError, match="gzip stream cut off before any trace text"):
        kinetoscope.load(path)
