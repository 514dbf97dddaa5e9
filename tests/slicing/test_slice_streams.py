"""`slice` from a stream within bounds (issue 36): it copies a stream to a temporary file
before reading it twice, and `slice /dev/zero -o x.json --window 0:` once wrote 7.7 GB
there in 18 s. A stream that is no trace is refused at its first bytes, as every other
command refuses it, and a longer stream stops at the cap; the copy is always removed."""

from __future__ import annotations

import contextlib
import gzip
import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from kinetoscope.errors import TraceError
from kinetoscope.slicing import Selection, slice_trace, spool

from ..conftest import corpus

REPO = Path(__file__).resolve().parents[2]
WINDOW = Selection(window=(0.0, None))


def _slice_cli(source: str, tmp_path: Path, stdin=None) -> tuple[subprocess.CompletedProcess, Path]:
    scratch = tmp_path / "scratch"
    scratch.mkdir(exist_ok=True)
    env = dict(os.environ, PYTHONPATH=str(REPO / "src"), TMPDIR=str(scratch))
    res = subprocess.run(
        [sys.executable, "-c", "from kinetoscope.cli import main; main()", "slice", source,
         "-o", str(tmp_path / "x.json"), "--window", "0:"],
        capture_output=True, env=env, timeout=60, stdin=stdin,
    )  # fmt: skip
    return res, scratch


@pytest.mark.skipif(not os.path.exists("/dev/zero"), reason="no /dev/zero here")
def test_slice_of_dev_zero_is_refused_at_once_and_writes_nothing(tmp_path):
    began = time.monotonic()
    res, scratch = _slice_cli("/dev/zero", tmp_path)
    assert time.monotonic() - began < 30
    err = res.stderr.decode()
    assert res.returncode == 2 and err.count("\n") == 1, err
    assert "is not JSON (it does not start with '{' or '[')" in err
    assert list(scratch.iterdir()) == [] and not (tmp_path / "x.json").exists()


def test_a_stream_of_open_braces_is_refused_at_once(tmp_path):
    """`yes "{" | kinetoscope slice -`: an object opens with a key, never with `{`."""
    feeder = subprocess.Popen(["yes", "{"], stdout=subprocess.PIPE)
    try:
        res, scratch = _slice_cli("-", tmp_path, stdin=feeder.stdout)
    finally:
        feeder.kill()
        feeder.wait()
    err = res.stderr.decode()
    assert res.returncode == 2 and "is not a JSON trace (it starts '{{')" in err, err
    assert list(scratch.iterdir()) == []


def _pipe_path(payload: bytes) -> tuple[Path, threading.Thread]:
    """`/dev/fd/N` of a pipe a thread fills with `payload` (the reader owns the fd)."""
    read, write = os.pipe()

    def feed():
        with os.fdopen(write, "wb") as sink, contextlib.suppress(BrokenPipeError):
            sink.write(payload)

    thread = threading.Thread(target=feed, daemon=True)
    thread.start()
    return Path(f"/dev/fd/{read}"), thread


def test_a_stream_past_the_cap_stops_there_and_leaves_no_copy(tmp_path, monkeypatch):
    monkeypatch.setattr(spool, "MAX_SPOOL_BYTES", 1 << 20)
    monkeypatch.setattr("tempfile.tempdir", str(tmp_path))
    path, thread = _pipe_path(b'{"traceEvents": [' + b" " * (4 << 20))
    with pytest.raises(TraceError, match="longer than 1 MB"):
        slice_trace(path, WINDOW, tmp_path / "out.json")
    thread.join(timeout=10)
    assert [p.name for p in tmp_path.iterdir()] == []


def test_a_trace_through_a_pipe_still_slices(tmp_path, monkeypatch):
    monkeypatch.setattr("tempfile.tempdir", str(tmp_path))
    text = gzip.decompress(corpus("gpu/simple_add_a100.json.gz").read_bytes())
    path, thread = _pipe_path(gzip.compress(text))
    result = slice_trace(path, WINDOW, tmp_path / "out.json")
    thread.join(timeout=10)
    assert result.events_out > 0
    assert json.loads((tmp_path / "out.json").read_text())["traceEvents"]
