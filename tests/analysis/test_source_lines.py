"""Source lines (with_stack traces): the innermost user frame, the lines view by account
class, and the line named in findings' evidence."""

from __future__ import annotations

import gzip
import json

import numpy as np
import pytest

from kinetoscope.analysis.lines_view import lines_view
from kinetoscope.analysis.source_lines import is_user_file, line_timeline, lines_of, parse_frame
from kinetoscope.pipeline.build import build_report
from kinetoscope.pipeline.lines_section import lines_section
from kinetoscope.trace import load
from kinetoscope.trace.categories import LAUNCH_NAMES

from ..conftest import corpus, kernel, launch, op, write_trace
from ..stack_traces import FILE, label, stack_trace  # noqa: F401 - the fixture

NCOMPASS = "gpu/ncompass_train_with_stack_h100nvl.pt.trace.json.gz"


# ---- which frames are the user's ---------------------------------------------------


@pytest.mark.parametrize(
    "file",
    [
        "train.py",
        "simplenet.py",
        "pkg/model.py",
        "/home/me/project/train.py",
        "main.py",
        "kinetoscope/capture/workloads/matmul_add.py",  # the program `profile` runs
    ],
)
def test_user_files(file):
    assert is_user_file(file)


@pytest.mark.parametrize(
    "file",
    [
        "torch/nn/modules/module.py",  # the profiler strips site-packages/ off torch
        "typing.py",
        "logging/__init__.py",
        "<frozen posixpath>",
        "/usr/lib/python3.11/site-packages/transformers/models/bert.py",
        "/opt/venv/lib/python3.11/dist-packages/numpy/core/fromnumeric.py",
        "/usr/lib/python3.11/threading.py",
        "/home/me/src/torch/_tensor.py",
        "kinetoscope/capture/session.py",  # `profile`'s harness
    ],
)
def test_not_user_files(file):
    assert not is_user_file(file)


def test_parse_frame():
    line = parse_frame("train.py(42): step")
    assert (line.file, line.line, line.function, line.label) == (
        "train.py",
        42,
        "step",
        "train.py:42 (step)",
    )
    assert parse_frame("<built-in method item of Tensor object at 0x796bd8f90c80>") is None
    assert parse_frame("nn.Module: Linear_0") is None


# ---- built traces: the mechanism -----------------------------------------------------


def _py(name, ts, dur, tid=1):
    return op(name, ts, dur, tid=tid, cat="python_function")


def _nested(tmp_path):
    """train.py(10): loop -> torch frame -> built-in -> aten::item; then train.py(20): log
    holds an op; a kernel launched inside loop; an autograd thread (tid 2) with no frames
    launches a kernel while the main thread sits in loop."""
    return load(
        write_trace(
            tmp_path / "t.json",
            [
                _py("train.py(10): loop", 0, 100),
                _py("torch/_tensor.py(1): __hash__", 10, 30),
                _py("<built-in method item of Tensor object at 0x1>", 15, 20),
                op("aten::item", 16, 10),
                op("aten::add", 50, 5),
                launch(51, 2, correlation=1),
                kernel("k1", 60, 5, correlation=1),
                launch(70, 2, correlation=2, tid=2),
                kernel("k2", 80, 5, correlation=2),
                _py("train.py(20): log", 120, 30),
                op("aten::mul", 125, 10),
            ],
        )
    )


def _index(trace, name):
    return int(np.flatnonzero(trace.name_id == trace.name_index[name])[0])


def test_innermost_user_frame_holds_ops_launches_and_device_work(tmp_path):
    trace = _nested(tmp_path)
    labels = [ln.label for ln in line_timeline(trace).lines]
    names = ["aten::item", "aten::add", "k1", "k2", "aten::mul"]
    got = lines_of(trace, np.array([_index(trace, n) for n in names]))
    # item runs under a torch frame and a built-in: its user line is loop; k1's launch is in
    # loop; k2 was launched by a thread with no frame while the main thread was in loop
    assert [labels[k] for k in got] == ["train.py:10 (loop)"] * 4 + ["train.py:20 (log)"]


def test_a_waiting_thread_does_not_hide_the_main_thread(tmp_path):
    """A background thread (a progress bar's) sits in one frame the whole time and runs
    no op: the main thread, which runs the ops, gives the line at each instant."""
    trace = load(
        write_trace(
            tmp_path / "t.json",
            [
                _py("app/progress.py(96): _watch", 0, 150, tid=9),
                _py("train.py(10): loop", 10, 100),
                op("aten::add", 20, 30),
            ],
        )
    )
    rows = {r.line.label: r for r in lines_view(trace).rows}
    # on a trace without device work aten::add's arithmetic is the (CPU's) device class
    assert rows["train.py:10 (loop)"].us["device"] == pytest.approx(30.0)
    assert rows["train.py:10 (loop)"].total_us == pytest.approx(100.0)
    assert rows["app/progress.py:96 (_watch)"].total_us == pytest.approx(50.0)  # 0-10, 110-150


def test_all_frames_shows_torch_and_builtins(tmp_path):
    trace = _nested(tmp_path)
    labels = [ln.label for ln in line_timeline(trace, True).lines]
    got = lines_of(trace, np.array([_index(trace, "aten::item")]), all_frames=True)
    assert labels[got[0]] == "<built-in method item of Tensor object>"  # address dropped
    assert "torch/_tensor.py:1 (__hash__)" in labels


def test_view_gives_device_time_to_the_launching_line(tmp_path):
    """Kernel time goes to the line that launched it, host time to the line the host is
    at: loop launched both kernels (10 us of device time), log ran aten::mul."""
    view = lines_view(_nested(tmp_path))
    rows = {r.line.label: r for r in view.rows}
    assert rows["train.py:10 (loop)"].us["device"] == pytest.approx(10.0)
    assert rows["train.py:10 (loop)"].launches == 2
    assert rows["train.py:20 (log)"].us["device"] == 0.0
    assert rows["train.py:20 (log)"].us["dispatch"] == pytest.approx(10.0)  # aten::mul


# ---- a CPU recording whose lines the test knows --------------------------------------


def test_recording_ops_are_held_by_their_lines(stack_trace):  # noqa: F811
    trace = load(stack_trace)
    labels = [ln.label for ln in line_timeline(trace).lines]

    def lines_for(name):
        events = np.flatnonzero(trace.name_id == trace.name_index[name])
        return {labels[k] if k >= 0 else None for k in lines_of(trace, events)}

    assert lines_for("aten::item") == {label("read_loss")}
    assert lines_for("aten::_local_scalar_dense") == {label("read_loss")}
    assert lines_for("aten::add") == {label("tiny_ops")}
    assert lines_for("aten::mm") == {label("forward")}


def test_recording_lines_view(stack_trace):  # noqa: F811
    section = lines_section(load(stack_trace))
    rows = {r["label"]: r for r in section["rows"]}
    for function in ("read_loss", "tiny_ops", "forward"):
        assert rows[label(function)]["calls"] == 3  # once per active step
        assert rows[label(function)]["file"] == FILE
    # on the CPU, the math ops (mm, sum, add) are the device class; item does no math
    assert rows[label("read_loss")]["us"]["dispatch"] > 0
    assert rows[label("read_loss")]["us"]["device"] == 0
    assert label("tiny_ops") in section["top"]["device"]
    assert label("forward") in section["top"]["device"]
    assert not any(r["file"].startswith("torch/") for r in section["rows"])
    assert section["device_is_cpu"] and section["hint"] is None


def test_recording_evidence_names_the_loop_line(stack_trace):  # noqa: F811
    """call-count fires on the 200 aten::add per step; its evidence names tiny_ops."""
    report = build_report(load(stack_trace))
    calls = next(f for f in report.findings if f.id == "call-count")
    add = next(e for e in calls.evidence if e.name == "aten::add")
    assert add.source == label("tiny_ops")
    assert add.to_dict()["source"] == label("tiny_ops")


# ---- a corpus GPU trace with stacks ----------------------------------------------------


def _raw_events(relative):
    with gzip.open(corpus(relative)) as f:
        return [e for e in json.load(f)["traceEvents"] if e.get("ph") == "X"]


def test_ncompass_lines():
    """Read from the file: the training loop is simplenet.py(34): train_simple_network,
    which calls .item() 132 times and loss.backward(); the model's forward is
    simplenet.py(26): forward, 10 calls. The forward's launches are the launch calls
    inside its frames on its thread; the backward's (on the autograd thread, no frames)
    go to the loop, which sits in loss.backward() meanwhile."""
    events = _raw_events(NCOMPASS)
    forwards = [e for e in events if e["name"] == "simplenet.py(26): forward"]
    in_forward = sum(
        1
        for e in events
        if e["name"] in LAUNCH_NAMES
        and any(f["tid"] == e["tid"] and f["ts"] <= e["ts"] < f["ts"] + f["dur"] for f in forwards)
    )
    section = lines_section(load(corpus(NCOMPASS)))
    rows = {r["label"]: r for r in section["rows"]}
    assert section["rows"][0]["label"] == "simplenet.py:34 (train_simple_network)"
    forward = rows["simplenet.py:26 (forward)"]
    assert forward["calls"] == len(forwards) == 10
    assert forward["launches"] == in_forward == 110
    loop = rows["simplenet.py:34 (train_simple_network)"]
    assert loop["syncs"] > 0 and loop["us"]["waits"] > 0  # the .item() syncs
    # every device copy's cudaMemcpyAsync runs in the loop's frame, none in forward/__init__
    copies = [e for e in events if e.get("cat") == "gpu_memcpy"]
    assert loop["copies"] == len(copies) == 18 and forward["copies"] == 0
    assert not any(r["file"].startswith(("torch/", "typing", "logging/")) for r in section["rows"])


def test_ncompass_sync_evidence_names_the_line_not_a_builtin():
    report = build_report(load(corpus(NCOMPASS)))
    sync = next(f for f in report.findings if f.id == "host-sync")
    texts = [e.text for e in sync.evidence]
    line = "from simplenet.py:34 (train_simple_network)"
    assert any("aten::item" in t and line in t for t in texts)
    every = [e for f in report.findings for e in f.evidence]
    assert not any("built-in method" in e.text for e in every)
    assert any(e.source == "simplenet.py:26 (forward)" for e in every)


# ---- must not fire: no stacks ----------------------------------------------------------


def test_no_stacks_gives_the_hint_and_no_lines():
    trace = load(corpus("gpu/simple_add_a100.json.gz"))
    section = lines_section(trace)
    assert section == {"has_stacks": False, "hint": section["hint"], "rows": []}
    assert "with_stack=True" in section["hint"] and "--with-stack" in section["hint"]
    report = build_report(trace)
    assert all(e.source is None for f in report.findings for e in f.evidence)


def test_odd_frames_never_raise(tmp_path):
    """Names that only look like frames, a frame without a duration, a child that outlives
    its parent: read as what they are, never an error."""
    events = [
        _py("x(abc): f", 0, 10),
        _py("(1): ", 0, 10),
        _py("", 0, 10),
        {**_py("train.py(3): no_dur", 1, 1), "dur": None},
        _py("train.py(10): outer", 20, 10),
        _py("train.py(11): inner", 25, 10),  # ends after its parent
        op("aten::add", 27, 1),
    ]
    trace = load(write_trace(tmp_path / "t.json", events))
    section = lines_section(trace)
    labels = {r["label"] for r in section["rows"]}
    assert "train.py:11 (inner)" in labels and "x(abc): f" not in labels
    assert build_report(trace).lines["has_stacks"]
