"""Reading is bounded whatever the input holds (issue 36): text that stops being JSON,
an event without end and a decompression bomb are refused early, whitespace is
dropped as it streams. The reproducers run in a child process under an address-space
limit, so a regression fails the test instead of taking the machine's memory."""

from __future__ import annotations

import gzip
import resource
import shlex
import subprocess
import sys
import zlib
from pathlib import Path

import pytest

from kinetoscope.trace.bounds import CHECK_FROM, RATIO_FROM, prefix_problem

#: the child's address space: the interpreter, numpy and msgspec take ~0.6 GB of it
LIMIT = 1500 << 20


def _gzip_of_spaces(path: Path, mib: int, head: bytes = b"", tail: bytes = b"") -> Path:
    """`head`, `mib` MiB of spaces, `tail`, gzipped in a second: after a full flush
    deflate forgets its history, so every MiB of spaces compresses to the same bytes,
    written once and repeated (zlib on the whole text takes half a minute here)."""
    spaces = b" " * (1 << 20)
    deflate = zlib.compressobj(9, zlib.DEFLATED, -15)
    first = deflate.compress(head) + deflate.flush(zlib.Z_FULL_FLUSH)
    block = deflate.compress(spaces) + deflate.flush(zlib.Z_FULL_FLUSH)
    last = deflate.compress(tail) + deflate.flush()
    crc = zlib.crc32(head)
    for _ in range(mib):
        crc = zlib.crc32(spaces, crc)
    crc = zlib.crc32(tail, crc)
    size = (len(head) + (mib << 20) + len(tail)) & 0xFFFFFFFF
    with open(path, "wb") as handle:
        handle.write(b"\x1f\x8b\x08\x00\x00\x00\x00\x00\x02\xff" + first)
        for _ in range(mib):
            handle.write(block)
        handle.write(last + crc.to_bytes(4, "little") + size.to_bytes(4, "little"))
    return path


def _limited() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (LIMIT, LIMIT))


def _run(command: str, timeout: float = 120) -> subprocess.CompletedProcess:
    return subprocess.run(
        command,
        shell=True,
        capture_output=True,
        text=True,
        timeout=timeout,
        preexec_fn=_limited,
    )


def test_an_endless_stream_of_braces_is_refused_after_a_mebibyte():
    # `{` then a newline then `{`: JSON wants a key after an object opens, so the text
    # is broken at its third byte; before, the loader read on until memory ran out
    done = _run(f"yes '{{' | {sys.executable} -m kinetoscope summary -")
    assert done.returncode == 2, done.stderr
    assert "is not valid JSON (JSON is malformed: object keys must be strings" in done.stderr
    assert "Traceback" not in done.stderr and "internal error" not in done.stderr


def test_an_endless_stream_of_brackets_is_refused_as_too_deep():
    done = _run(f"yes '[' | {sys.executable} -m kinetoscope summary -")
    assert done.returncode == 2, done.stderr
    assert "nested too deeply" in done.stderr


def test_a_gzip_bomb_of_whitespace_is_refused_before_it_is_inflated(tmp_path):
    bomb = _gzip_of_spaces(tmp_path / "bomb.json.gz", 512, b'{"traceEvents": [', b"]}")
    with gzip.open(bomb) as text:
        assert text.read(20).startswith(b'{"traceEvents": [  ')
    assert bomb.stat().st_size < 1 << 20
    done = _run(f"{sys.executable} -m kinetoscope summary {bomb}")
    assert done.returncode == 2, done.stderr
    assert "inflates over 500:1" in done.stderr and "decompression bomb" in done.stderr
    # refused once RATIO_FROM bytes came out, long before the 512 MiB
    shown = int(done.stderr.split(" MiB of text")[0].rsplit("(", 1)[1])
    assert RATIO_FROM >> 20 <= shown < 256


def test_whitespace_between_events_is_read_in_small_memory(tmp_path):
    # 300 MiB of whitespace before and between events: the address-space limit leaves
    # the loader well under 300 MiB, so holding the whitespace would fail
    path = tmp_path / "spaces.json"
    with open(path, "wb") as handle:
        handle.write(b'{"traceEvents": [')
        handle.write(b" " * (150 << 20))
        handle.write(b'{"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 1, "tid": 1, ')
        handle.write(b'"ts": 10, "dur": 5},')
        handle.write(b"\n" * (150 << 20))
        handle.write(b'{"ph": "X", "cat": "cpu_op", "name": "aten::add", "pid": 1, "tid": 1, ')
        handle.write(b'"ts": 20, "dur": 5}]}')
    done = _run(f"{sys.executable} -m kinetoscope table {path}")
    assert done.returncode == 0, done.stderr
    assert "aten::mm" in done.stdout and "aten::add" in done.stdout


def test_a_broken_event_stream_is_refused_once_its_text_doubles(tmp_path):
    # a valid head, then an "event" that is binary noise: no boundary ever comes
    path = tmp_path / "noise.json"
    path.write_bytes(b'{"traceEvents": [{"ph": "X", "name": ' + b"\x07" * (4 * CHECK_FROM))
    done = _run(f"{sys.executable} -m kinetoscope summary {path}")
    assert done.returncode == 2, done.stderr
    assert "is not valid JSON" in done.stderr


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        (b'{"traceEvents": [{"ph": "X", "na', None),  # valid so far: truncated
        (b'{"a": 1} {"b"', None),  # a complete value, then more: decided later
        (b"{\n{\n{", "object keys must be strings"),
        (b'{"a": tru', None),
        (b'{"a": trux', "invalid character"),
    ],
)
def test_prefix_problem_tells_broken_text_from_text_cut_short(text, problem):
    found = prefix_problem(text)
    if problem is None:
        assert found is None
    else:
        assert found is not None and problem in found


def test_a_trace_from_the_corpus_is_read_as_before(tmp_path):
    # must not fire: a real gzip trace (ratio about 20:1) loads in full
    from kinetoscope.trace.load import load

    from ..conftest import corpus

    trace = load(corpus("gpu/tracelens_h100__Qwen_Qwen1.5-0.5B-Chat__1016005.json.gz"))
    assert len(trace) > 10_000
    assert not any("bomb" in w for w in trace.warnings)


def test_the_ratio_estimate_of_a_bomb_inflates_a_bounded_sample(tmp_path):
    # budget.text_bytes sizes a gzip file from its first MiB; a bomb's first MiB held
    # a GiB of text, inflated at once (2.1 GB peak before the load began): under the
    # address-space limit that is a MemoryError
    bomb = _gzip_of_spaces(tmp_path / "bomb.json.gz", 2048)
    code = (
        "import sys; from pathlib import Path; from kinetoscope.trace.budget import text_bytes; "
        "print(text_bytes(Path(sys.argv[1])))"
    )
    done = _run(f"{sys.executable} -c {shlex.quote(code)} {shlex.quote(str(bomb))}")
    assert done.returncode == 0, done.stderr
    assert int(done.stdout) >= 1 << 30  # the estimate still says how large the text is
