"""Loading a plain file in two halves on two processes (trace/split.py) must give
exactly the Trace that one pass gives, and fall back to one pass for anything odd."""

from __future__ import annotations

import dataclasses
import glob
import gzip
import json
import os
import sys

import numpy as np
import pytest

import kinetoscope
from kinetoscope.errors import TraceError
from kinetoscope.trace import split
from kinetoscope.trace.build import TraceBuilder
from tests.conftest import corpus, corpus_files, kernel, launch, op, write_trace


@pytest.fixture(autouse=True)
def _parse_every_time(monkeypatch):
    """Each load here parses: a second load served from the trace cache would compare the
    cache with the parse, not the path under test with the one-pass load."""
    monkeypatch.setenv("KINETOSCOPE_NO_CACHE", "1")


load_module = sys.modules["kinetoscope.trace.load"]
ONE_PASS = 1 << 62  # a threshold no file reaches


def assert_same(a, b, where="trace") -> None:
    """Every field equal: columns, names, lanes, links, sparse args, meta, warnings."""
    assert type(a) is type(b), where
    for field in dataclasses.fields(a):
        x, y = getattr(a, field.name), getattr(b, field.name)
        label = f"{where}.{field.name}"
        if isinstance(x, np.ndarray):
            assert x.dtype == y.dtype and x.shape == y.shape, label
            assert np.array_equal(x, y, equal_nan=x.dtype.kind == "f"), label
        elif dataclasses.is_dataclass(x):
            assert_same(x, y, label)
        else:
            assert x == y, label


def _live_children() -> set[int]:
    """This process's children (zombies included) as Linux lists them."""
    pids: set[int] = set()
    for listing in glob.glob(f"/proc/{os.getpid()}/task/*/children"):
        with open(listing) as f:
            pids.update(int(pid) for pid in f.read().split())
    return pids


_BEFORE: set[int] = set()


@pytest.fixture(autouse=True)
def _children_before_the_test():
    """Children started by earlier tests (a Dask or Ray cluster's) are not the loader's."""
    _BEFORE.clear()
    _BEFORE.update(_live_children())
    yield


def no_children_left() -> bool:
    """The loader left no child behind: nothing new beside what ran before the test."""
    while True:  # reap finished children first: a reaped worker is gone
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            break
        if pid == 0:
            break
    return _live_children() <= _BEFORE


def plain_copy(source, tmp_path):
    """The corpus file's JSON text, uncompressed (only plain files are split)."""
    target = tmp_path / source.name.removesuffix(".gz")
    data = source.read_bytes()
    target.write_bytes(gzip.decompress(data) if data[:2] == b"\x1f\x8b" else data)
    return target


SMALL_CORPUS = [
    p for p in corpus_files() if p.stat().st_size < 500_000 and "multirank" not in p.parts
]


@pytest.mark.parametrize("source", SMALL_CORPUS, ids=lambda p: p.name)
def test_split_equals_one_pass_on_corpus(source, tmp_path, monkeypatch):
    path = plain_copy(source, tmp_path)
    try:
        whole = kinetoscope.load(path, split_min_bytes=ONE_PASS)
    except TraceError:
        pytest.skip("not loadable in one pass either")
    halves = load_module.build_split(path, TraceBuilder)
    assert halves is not None, "the split path gave up on a well-formed file"
    assert_same(whole, kinetoscope.load(path, split_min_bytes=0))
    assert no_children_left()


def test_split_on_a_larger_trace_with_flows_and_ns(tmp_path):
    """15 MB of JSON: many pieces per half, ac2g flows, ns timestamps."""
    path = plain_copy(corpus("gpu/resnet_train_ns.pt.trace.json.gz"), tmp_path)
    whole = kinetoscope.load(path, split_min_bytes=ONE_PASS)
    halves = load_module.build_split(path, TraceBuilder)
    assert halves is not None and halves[2] > 0
    assert_same(whole, kinetoscope.load(path, split_min_bytes=0))
    assert (whole.launch_of >= 0).sum() > 1000
    assert no_children_left()


def events(n: int) -> list[dict]:
    out = []
    for i in range(n):
        out.append(op(f"aten::op{i % 7}", 10.0 * i, 5.0, **{"External id": i}))
        out.append(launch(10.0 * i + 1, 2.0, i))
        out.append(kernel(f"k{i % 5}", 10.0 * i + 3, 4.0, correlation=i))
    return out


def test_corrupt_second_half_is_the_same_error(tmp_path):
    path = write_trace(tmp_path / "t.json", events(3000))  # several pieces per half
    text = path.read_bytes()
    at = text.index(b'"dur": 4.0', len(text) * 3 // 4)  # a kernel in the worker's half
    path.write_bytes(text[:at] + b'"dur": tru' + text[at + len(b'"dur": 4.0') :])
    with pytest.raises(TraceError) as one_pass:
        kinetoscope.load(path, split_min_bytes=ONE_PASS)
    with pytest.raises(TraceError) as halves:
        kinetoscope.load(path, split_min_bytes=0)
    assert str(halves.value) == str(one_pass.value)
    assert "\n" not in str(halves.value)
    assert no_children_left()


def test_corrupt_first_half_is_the_same_error(tmp_path):
    path = write_trace(tmp_path / "t.json", events(3000))
    text = path.read_bytes()
    at = text.index(b'"dur": 5.0', len(text) // 4)  # an op early in the first half
    path.write_bytes(text[:at] + b'"dur": [' + text[at + len(b'"dur": 5.0') :])
    with pytest.raises(TraceError) as one_pass:
        kinetoscope.load(path, split_min_bytes=ONE_PASS)
    with pytest.raises(TraceError) as halves:
        kinetoscope.load(path, split_min_bytes=0)
    assert str(halves.value) == str(one_pass.value)
    assert no_children_left()


def test_truncated_and_control_characters_same_warnings(tmp_path):
    evs = events(300)
    evs[-40]["name"] = "k\x01ernel"  # a raw control character in the worker's half
    path = tmp_path / "t.json"
    path.write_bytes(json.dumps({"traceEvents": evs}).replace("\\u0001", "\x01").encode())
    whole = kinetoscope.load(path, split_min_bytes=ONE_PASS)
    assert any("control characters" in w for w in whole.warnings)
    assert_same(whole, kinetoscope.load(path, split_min_bytes=0))
    cut = tmp_path / "cut.json"
    cut.write_bytes(path.read_bytes()[: -len(path.read_bytes()) // 5])
    whole = kinetoscope.load(cut, split_min_bytes=ONE_PASS)
    assert any("truncated" in w for w in whole.warnings)
    assert_same(whole, kinetoscope.load(cut, split_min_bytes=0))
    assert no_children_left()


def test_a_boundary_lookalike_inside_a_string_is_not_taken_as_the_cut(tmp_path):
    evs = events(300)
    path = write_trace(tmp_path / "t.json", evs)
    size = len(path.read_bytes())
    # a name holding '},{' that spans the middle of the file: the first `},{` after
    # the middle lies inside that string, and the split point must skip it
    evs.insert(len(evs) // 2, op("x" * 200 + "},{" * 400, 1.0, 1.0))
    path = write_trace(tmp_path / "t.json", evs)
    _, first_end, _ = split.split_point(path)
    text = path.read_bytes()
    name_at = text.index(b"x" * 200)
    assert not name_at < first_end < name_at + 200 + 3 * 400  # not inside the name
    assert text[first_end - 1 : first_end] == b"}"
    assert size < len(text)
    assert_same(
        kinetoscope.load(path, split_min_bytes=ONE_PASS), kinetoscope.load(path, split_min_bytes=0)
    )
    assert no_children_left()


def test_a_worker_that_dies_falls_back(tmp_path, monkeypatch):
    path = write_trace(tmp_path / "t.json", events(300))
    monkeypatch.setattr(split, "_worker", lambda *args: os._exit(3))
    assert load_module.build_split(path, TraceBuilder) is None
    assert_same(
        kinetoscope.load(path, split_min_bytes=ONE_PASS), kinetoscope.load(path, split_min_bytes=0)
    )
    assert no_children_left()


def test_small_and_gzip_files_load_in_one_pass(tmp_path, monkeypatch):
    def refuse(*args):
        raise AssertionError("split attempted")

    monkeypatch.setattr(load_module, "build_split", refuse)
    kinetoscope.load(write_trace(tmp_path / "t.json", events(30)))  # below the default size
    kinetoscope.load(write_trace(tmp_path / "t.json.gz", events(30), gz=True), split_min_bytes=0)


def test_no_process_to_be_had_falls_back(tmp_path, monkeypatch):
    path = write_trace(tmp_path / "t.json", events(300))

    def no_fork():
        raise BlockingIOError(11, "Resource temporarily unavailable")

    monkeypatch.setattr(os, "fork", no_fork)
    assert load_module.build_split(path, TraceBuilder) is None
    assert len(kinetoscope.load(path, split_min_bytes=0)) == 900
