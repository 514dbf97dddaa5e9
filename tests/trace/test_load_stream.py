"""The streamed loader: cutting the text into pieces never changes what is loaded.

Real files are cut every few MB; here pieces of a few hundred bytes force many
cuts (and wrong boundary guesses) on corpus traces and on tiny adversarial ones.
"""

from __future__ import annotations

import importlib

import numpy as np
import pytest

import kinetoscope
from kinetoscope.trace import decode, source

from ..conftest import corpus, op, write_trace

_COLUMNS = ("ts", "dur", "name_id", "cat", "is_instant", "external_id", "correlation")


@pytest.fixture
def tiny_pieces(monkeypatch):
    monkeypatch.setattr(decode, "_PIECE", 700)
    monkeypatch.setattr(source, "_READ", 300)
    monkeypatch.setattr(source, "_GZIP_READ", 200)


def _lane_key(lane):
    return (lane.pid, lane.tid, lane.kind, lane.label, lane.device, lane.stream)


def _same(a, b):
    for column in _COLUMNS:
        assert np.array_equal(getattr(a, column), getattr(b, column)), column
    assert a.names == b.names
    # lane ids may be numbered differently; each event's lane must be the same
    assert [_lane_key(a.lanes[i]) for i in a.lane] == [_lane_key(b.lanes[i]) for i in b.lane]
    assert a.input_dims == b.input_dims
    assert np.array_equal(a.kernel_args.grid, b.kernel_args.grid)
    assert np.array_equal(a.memory.nbytes, b.memory.nbytes)
    assert a.meta == b.meta
    assert a.devices == b.devices


@pytest.mark.parametrize(
    "relative",
    [
        "gpu/alexnet_train.json.gz",  # 2021 schema, memory events
        "gpu/amd_mi250_minitoy_train.json.gz",  # string stream ids: lenient decoding
        "gpu/triton_example.json.gz",  # Inductor text grids
        "cpu/cpu_only_rank34.pt.trace.json.gz",
        "gpu/tracelens_mi300__resnet_act_checkpoint.json.gz",  # ns timestamps, baseTime
    ],
)
def test_small_pieces_load_the_same_trace(relative, monkeypatch):
    path = corpus(relative)
    whole = kinetoscope.load(path)
    monkeypatch.setattr(decode, "_PIECE", 2000)
    monkeypatch.setattr(source, "_READ", 1000)
    monkeypatch.setattr(source, "_GZIP_READ", 500)
    _same(kinetoscope.load(path), whole)


def test_boundary_lookalikes_inside_strings(tmp_path, tiny_pieces):
    # `},{` inside names and args: a cut there is invalid JSON and must be retried
    tricky = '}, {"ph": "X", "name": "fake"}, {'
    events = [op(f"aten::op{i}{tricky * (i % 3)}", i * 10, 5, note=tricky) for i in range(60)]
    path = write_trace(tmp_path / "t.json", events, deviceProperties=[{"id": 0, "name": "x"}])
    trace = kinetoscope.load(path)
    assert len(trace) == 60
    assert trace.name(1) == f"aten::op1{tricky}"
    assert not trace.warnings


def test_keys_after_the_events_are_read(tmp_path, tiny_pieces):
    events = [op(f"aten::op{i}", i * 10, 5) for i in range(40)]
    path = tmp_path / "t.json"
    body = write_trace(tmp_path / "tmp.json", events).read_bytes()
    # move keys after traceEvents, with brackets inside strings, as Kineto does
    tail = b', "traceName": "x]y", "INFO": ["[W] a]", "b"], "baseTimeNanoseconds": 17}'
    path.write_bytes(body[:-1] + tail)
    trace = kinetoscope.load(path)
    assert len(trace) == 40
    assert trace.meta.trace_name == "x]y"
    assert trace.meta.base_time_ns == 17


def test_control_characters_in_later_pieces(tmp_path, tiny_pieces):
    events = [op(f"aten::op{i}", i * 10, 5) for i in range(50)]
    events[45]["name"] = "bad\x01name"
    path = write_trace(tmp_path / "t.json", events)
    path.write_bytes(path.read_bytes().replace(b"\\u0001", b"\x01"))  # raw, as PyTorch writes
    assert b"\x01" in path.read_bytes()
    trace = kinetoscope.load(path)
    assert len(trace) == 50
    assert "bad name" in trace.names
    assert any("control characters" in w for w in trace.warnings)


def test_truncated_file_with_small_pieces(tmp_path, tiny_pieces):
    events = [op(f"aten::op{i}", i * 10, 5) for i in range(200)]
    full = write_trace(tmp_path / "full.json", events).read_bytes()
    cut = tmp_path / "cut.json"
    cut.write_bytes(full[: int(len(full) * 0.6)])
    trace = kinetoscope.load(cut)
    assert 100 <= len(trace) < 200
    assert [trace.name(i) for i in range(3)] == ["aten::op0", "aten::op1", "aten::op2"]
    assert any(f"recovered {len(trace)} complete events" in w for w in trace.warnings)


def test_events_key_nested_in_the_head_is_not_taken(tmp_path, tiny_pieces):
    # a nested "traceEvents" before the real one: the head check rejects it
    events = [op(f"aten::op{i}", i * 10, 5) for i in range(30)]
    body = write_trace(tmp_path / "t.json", events, distributedInfo={"traceEvents": [1, 2]})
    trace = kinetoscope.load(body)
    assert len(trace) == 30
    assert trace.meta.distributed == {"traceEvents": [1, 2]}


def test_lanes_without_the_lookup_table(monkeypatch):
    # traces with very many (pid, tid) pairs intern lanes as tuples instead
    columns = importlib.import_module("kinetoscope.trace.columns")  # where LaneIds reads it
    path = corpus("gpu/tracelens_mi300__resnet_act_checkpoint.json.gz")
    with_table = kinetoscope.load(path)
    monkeypatch.setattr(columns, "MAX_LANE_TABLE", 0)
    _same(kinetoscope.load(path), with_table)


def test_concatenated_gzip_members(tmp_path, tiny_pieces):
    import gzip

    events = [op(f"aten::op{i}", i * 10, 5) for i in range(30)]
    text = write_trace(tmp_path / "t.json", events).read_bytes()
    half = len(text) // 2
    path = tmp_path / "t.json.gz"
    path.write_bytes(gzip.compress(text[:half]) + gzip.compress(text[half:]))
    trace = kinetoscope.load(path)
    assert len(trace) == 30 and not trace.warnings


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (b"", False),
        (b"1" * 18, False),
        (b"1" * 19, False),  # 19 digits under 2**63
        (b"9" * 19, True),  # 19 digits over it
        (b'{"Bytes": 123456789012345678}', False),  # 18 digits: fits int64
        (b'{"Bytes": 1180591620717411303424}', True),  # 2**70
        (b'{"id": 9223372036854775807}', False),  # int64's maximum
        (b'{"id": 9223372036854775808}', True),  # one past it
        (b'{"id": -9223372036854775809}', True),  # one under int64's minimum
        (b'{"ts": 1234567890.123456789012}', False),  # 10 + 12 digits, split by the point
        (b'{"bw": 0.0013851614578824344}', False),  # 19 digits of a fraction
        (b'{"bw": 0.99999999999999999999}', False),  # 20 of them
        (b"[0.0013851614578824344, 99999999999999999999]", True),  # a fraction, then an int
        (b'{"x": 12345678901234567890.5}', True),  # 20 digits before the point: kept to check
        (b"0" * 19, False),
        (b"x" + b"9" * 19 + b"x", True),
        ("\u0661".encode() * 19, False),  # Arabic-Indic digits: not ASCII, not JSON digits
        (bytes(range(256)) * 2, False),
    ],
)
def test_big_int_gate_finds_integer_runs_past_int64(text, expected):
    """The gate before `drop_big_ints`: true where the text may hold an integer outside
    int64, false for the 19-digit runs real traces hold (fractions, int64's maximum), for
    bytes and for the bytearray pieces the loader cuts."""
    from kinetoscope.trace.repair import has_big_int

    assert has_big_int(text) is expected
    assert has_big_int(bytearray(text)) is expected
