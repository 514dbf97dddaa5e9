"""Inputs that stress the decoder itself: not UTF-8, nested too deep, numbers
beyond int64, strings full of event-boundary lookalikes. Each either loads or
is one clear `TraceError` (exit 2), never an internal error."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

import kinetoscope
from kinetoscope.errors import TraceError
from tests.conftest import kernel, launch, op, write_trace

EVENTS = [op("aten::mm", 1, 10), launch(2, 3, 7), kernel("gemm", 5, 4, 7)]


def _text(extra_args: str) -> bytes:
    """The tiny trace with `extra_args` spliced into the first op's args."""
    text = json.dumps({"schemaVersion": 1, "traceEvents": EVENTS})
    return text.replace('"args": {}', '"args": {' + extra_args + "}", 1).encode()


BAD = {
    "invalid_utf8": (_text("").replace(b"aten::mm", b"aten::\xff\xfe"), "not valid UTF-8"),
    "args_1000_deep": (_text('"x": ' + "[" * 1000 + "]" * 1000), "nested too deeply"),
    "objects_5000_deep": (_text('"x": ' + '{"a":' * 5000 + "1" + "}" * 5000), "nested too deeply"),
}


@pytest.mark.parametrize("kind", sorted(BAD))
def test_decoder_refusals_are_trace_errors(tmp_path, kind):
    data, message = BAD[kind]
    path = tmp_path / f"{kind}.json"
    path.write_bytes(data)
    with pytest.raises(TraceError, match=message):
        kinetoscope.load(path)
    with pytest.raises(TraceError, match=message):  # the two-process loader too
        kinetoscope.load(path, split_min_bytes=0)


@pytest.mark.parametrize("kind", sorted(BAD))
def test_decoder_refusals_exit_2_with_one_line(tmp_path, kind):
    data, message = BAD[kind]
    path = tmp_path / f"{kind}.json"
    path.write_bytes(data)
    done = subprocess.run(
        [sys.executable, "-m", "kinetoscope", "explain", str(path)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 2, done.stderr
    assert len(done.stderr.strip().splitlines()) == 1 and message in done.stderr


@pytest.mark.parametrize(
    "field", ['"External id"', '"correlation"', '"stream"', '"Bytes"', '"registers per thread"']
)
def test_integers_beyond_int64_in_args_load(tmp_path, field):
    """An id past int64 cannot be an id the profiler wrote: it reads as absent (-1)."""
    path = tmp_path / "big.json"
    path.write_bytes(_text(f"{field}: {'9' * 30}"))
    trace = kinetoscope.load(path)
    assert len(trace) == 3
    report = kinetoscope.explain(trace)
    assert report.verdict.regime


def test_integer_beyond_int64_as_pid_and_ts(tmp_path):
    events = [dict(e) for e in EVENTS]
    events[0]["pid"] = 10**30
    events[1]["ts"] = 10**30
    path = write_trace(tmp_path / "big.json", events)
    try:
        trace = kinetoscope.load(path)
    except TraceError as exc:  # refusing is allowed; crashing is not
        assert str(path) in str(exc)
    else:
        kinetoscope.explain(trace)


def test_20000_digit_number_is_accepted_or_refused_cleanly(tmp_path):
    """A number of 20,000 digits: read as a (huge) number or refused in one line.
    The time it takes is recorded in docs/robustness.md, not asserted here."""
    path = tmp_path / "digits.json"
    path.write_bytes(_text('"x": ' + "7" * 20000))
    try:
        trace = kinetoscope.load(path)
    except TraceError as exc:
        assert "\n" not in str(exc)
    else:
        assert len(trace) == 3


def test_boundary_lookalikes_in_a_string_load_the_same_through_the_split_loader(tmp_path):
    """A Python repr in args holds `},{` thousands of times; the split point and
    the piece cuts must not be taken inside it."""
    lookalike = "[{'a': 1},{'b': 2}]" * 20000  # ~400 kB of `},{` inside one string
    events = [
        op(f"aten::op{i}", i * 10, 5, note=lookalike if i % 50 == 7 else "x") for i in range(400)
    ]
    path = write_trace(tmp_path / "repr.json", events)
    one_pass = kinetoscope.load(path)
    split = kinetoscope.load(path, split_min_bytes=0)
    assert len(one_pass) == len(split) == 400
    assert one_pass.names == split.names and (one_pass.ts == split.ts).all()


@pytest.mark.parametrize("limit", [150, 100_000])
@pytest.mark.parametrize("kind", ["args_1000_deep", "objects_5000_deep"])
def test_nesting_limit_does_not_follow_the_recursion_limit(tmp_path, limit, kind):
    # torch's inductor raises the interpreter's limit to 100,000 on import; before the
    # decoder got a fixed stack, the 1000-deep file then loaded (and deeper ones crashed)
    data, message = BAD[kind]
    path = tmp_path / f"{kind}.json"
    path.write_bytes(data)
    before = sys.getrecursionlimit()
    sys.setrecursionlimit(limit)
    try:
        with pytest.raises(TraceError, match=message):
            kinetoscope.load(path)
        assert sys.getrecursionlimit() == limit  # the caller's limit is restored
        shallow = tmp_path / "shallow.json"
        shallow.write_bytes(_text('"x": ' + "[" * 50 + "]" * 50))
        assert len(kinetoscope.load(shallow)) == 3  # a low caller limit refuses nothing
    finally:
        sys.setrecursionlimit(before)
