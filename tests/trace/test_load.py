"""Loader: every corpus file loads; schema generations, links and bad input behave."""

from __future__ import annotations

import gzip

import numpy as np
import pytest

import kinetoscope
from kinetoscope.errors import TraceError
from kinetoscope.trace import Cat

from ..conftest import corpus, corpus_files, kernel, launch, op, write_trace


@pytest.mark.parametrize("path", corpus_files(), ids=lambda p: p.name)
def test_every_corpus_file_loads(path):
    trace = kinetoscope.load(path)
    assert len(trace) > 0
    assert np.all(trace.dur >= 0)
    assert not trace.warnings


def test_2021_category_names_normalise():
    trace = kinetoscope.load(corpus("gpu/resnet50_dataloader_workers0.pt.trace.json.gz"))
    # the file says Operator / Runtime / Kernel / Memcpy; the model says Cat.*
    assert trace.mask(Cat.CPU_OP).sum() > 20000
    assert trace.mask(Cat.RUNTIME).sum() > 10000
    assert trace.mask(Cat.KERNEL).sum() == 8772
    assert trace.mask(Cat.MEMCPY).sum() == 12
    # string tid "stream 7" becomes a device lane with stream 7
    streams = {ln.stream for ln in trace.device_lanes}
    assert 7 in streams
    # every kernel links to its launch call by correlation id
    assert (trace.launch_of[trace.kernels] >= 0).all()
    assert [s.number for s in trace.steps][:3] == [5, 6, 7]
    assert len(trace.memory) > 10000


def test_hip_runtime_names_link_kernels():
    trace = kinetoscope.load(corpus("gpu/amd_mi250_minitoy_train.json.gz"))
    assert trace.devices[0].vendor == "AMD"
    launched = trace.launch_of[trace.kernels]
    assert (launched >= 0).all()
    assert {trace.name(i) for i in launched} <= {
        "hipLaunchKernel",
        "hipExtModuleLaunchKernel",
        "hipModuleLaunchKernel",
    }


def test_nanosecond_trace_keeps_fractional_microseconds():
    trace = kinetoscope.load(corpus("gpu/tracelens_mi300__resnet_act_checkpoint.json.gz"))
    frac = trace.dur[trace.kernels] % 1
    assert (frac > 0).mean() > 0.5
    assert trace.meta.base_time_ns is not None


def test_host_only_and_device_only(tmp_path):
    host = kinetoscope.load(corpus("cpu/cpu_only_rank34.pt.trace.json.gz"))
    assert not host.has_device
    dev = kinetoscope.load(corpus("gpu/tracelens_mi210__gpu_only_trace.json.gz"))
    assert dev.has_device
    assert dev.mask(Cat.CPU_OP).sum() == 0


def test_flow_events_link_when_correlation_args_are_missing(tmp_path):
    events = [
        op("aten::mm", 0, 50),
        {
            "ph": "X",
            "cat": "cuda_runtime",
            "name": "cudaLaunchKernel",
            "pid": 100,
            "tid": 1,
            "ts": 10,
            "dur": 5,
        },
        {"ph": "s", "cat": "ac2g", "name": "ac2g", "id": 77, "pid": 100, "tid": 1, "ts": 10},
        {
            "ph": "X",
            "cat": "kernel",
            "name": "gemm",
            "pid": 0,
            "tid": 7,
            "ts": 30,
            "dur": 8,
            "args": {"stream": 7, "device": 0},
        },
        {
            "ph": "f",
            "cat": "ac2g",
            "name": "ac2g",
            "id": 77,
            "pid": 0,
            "tid": 7,
            "ts": 30,
            "bp": "e",
        },
    ]
    trace = kinetoscope.load(write_trace(tmp_path / "t.json", events))
    k = trace.kernels[0]
    assert trace.name(trace.launch_of[k]) == "cudaLaunchKernel"
    assert trace.name(trace.op_of[k]) == "aten::mm"


def test_tree_and_self_time(tmp_path):
    events = [
        op("ProfilerStep#3", 0, 100, cat="user_annotation"),
        op("aten::linear", 10, 60),
        op("aten::addmm", 20, 40),
        launch(30, 10, correlation=5),
        kernel("gemm", 45, 20, correlation=5),
    ]
    trace = kinetoscope.load(write_trace(tmp_path / "t.json", events))
    names = [trace.name(i) for i in range(len(trace))]
    addmm = names.index("aten::addmm")
    assert trace.name(trace.parent[addmm]) == "aten::linear"
    assert trace.self_time[addmm] == pytest.approx(30.0)
    assert trace.self_time[names.index("aten::linear")] == pytest.approx(20.0)
    assert trace.name(trace.op_of[names.index("gemm")]) == "aten::addmm"
    assert [s.number for s in trace.steps] == [3]


def test_control_characters_are_tolerated(tmp_path):
    body = (
        b'{"traceEvents": [{"ph": "X", "cat": "cpu_op", "name": "bad\x01name\nhere", '
        b'"pid": 1, "tid": 1, "ts": 5, "dur": 3}]}'
    )
    path = tmp_path / "ctrl.json"
    path.write_bytes(body)
    trace = kinetoscope.load(path)
    assert trace.names == ["bad name here"]
    assert any("control characters" in w for w in trace.warnings)
    assert path.read_bytes() == body  # the user's file is untouched


def test_truncated_file_recovers_complete_events(tmp_path):
    events = [op(f"aten::op{i}", i * 10, 5) for i in range(50)]
    full = write_trace(tmp_path / "full.json", events).read_bytes()
    cut = tmp_path / "cut.json"
    cut.write_bytes(full[: int(len(full) * 0.7)])
    trace = kinetoscope.load(cut)
    assert 30 <= len(trace) < 50
    assert any("truncated" in w and f"{len(trace)} complete events" in w for w in trace.warnings)


def test_truncated_gzip_recovers(tmp_path):
    events = [op(f"aten::op{i}", i * 10, 5, extra="x" * 200) for i in range(2000)]
    data = write_trace(tmp_path / "full.json.gz", events, gz=True).read_bytes()
    cut = tmp_path / "cut.json.gz"
    cut.write_bytes(data[: len(data) // 2])
    trace = kinetoscope.load(cut)
    assert 0 < len(trace) < 2000
    assert any("gzip stream ends early" in w for w in trace.warnings)


@pytest.mark.parametrize(
    "content, message",
    [
        (b"", "is empty"),
        (b"[1, 2, 3]", "JSON array"),
        (b'{"foo": 1}', "no 'traceEvents'"),
        (b'{"traceEvents": []}', "no events"),
        (
            b'{"traceEvents": [{"ph": "X", "name": "draw", "cat": "blink", "pid": 1, "tid": 1, '
            b'"ts": 1, "dur": 2}]}',
            "not a PyTorch profiler",
        ),
        (b"hello world", "not JSON"),
        (b'{"traceEvents": [{"ph": "X", "name": ', "not valid JSON"),
    ],
)
def test_bad_input_is_one_clear_error(tmp_path, content, message):
    path = tmp_path / "bad.json"
    path.write_bytes(content)
    with pytest.raises(TraceError) as err:
        kinetoscope.load(path)
    assert message in str(err.value)
    assert str(path) in str(err.value)


def test_corrupt_gzip_missing_file_and_directory(tmp_path):
    bad = tmp_path / "bad.json.gz"
    bad.write_bytes(b"\x1f\x8b" + b"\x00garbage" * 10)
    with pytest.raises(TraceError, match="gzip"):
        kinetoscope.load(bad)
    with pytest.raises(TraceError, match="no such file"):
        kinetoscope.load(tmp_path / "nope.json")
    with pytest.raises(TraceError, match="directory"):
        kinetoscope.load(tmp_path)


def test_gzip_and_plain_give_the_same_trace(tmp_path):
    src = corpus("gpu/alexnet_train.json.gz")
    plain = tmp_path / "alexnet.json"
    plain.write_bytes(gzip.decompress(src.read_bytes()))
    a, b = kinetoscope.load(src), kinetoscope.load(plain)
    assert np.array_equal(a.ts, b.ts) and a.names == b.names


def test_digit_string_and_int_tids_are_one_thread(tmp_path):
    # 2021 traces write ops with "tid": "25738" and [memory] instants with "tid": 25738
    events = [
        op("aten::empty", 0, 10, tid="25738", pid=25738),
        {
            "ph": "i",
            "s": "t",
            "name": "[memory]",
            "pid": 25738,
            "tid": 25738,
            "ts": 5,
            "args": {"Bytes": 4, "Device Type": 0, "Device Id": -1},
        },
        {"ph": "M", "name": "thread_name", "pid": 25738, "tid": "25738", "args": {"name": "main"}},
    ]
    trace = kinetoscope.load(write_trace(tmp_path / "t.json", events))
    assert len(trace.lanes) == 1
    assert trace.lane[0] == trace.lane[1]
    assert (trace.lanes[0].tid, trace.lanes[0].label) == (25738, "main")
