"""Every wait is a wait: host time blocked in a runtime call that waits for the device.

A copy into pageable host memory blocks whatever its `Async` suffix (CUDA's "API
synchronization behavior"); a call of any name that ends when the device work queued
before it ends, after lasting much longer than a launch, waited; a slow launch did not.
"""

from __future__ import annotations

import pytest

import kinetoscope
from kinetoscope.analysis.blocking import WAKE_US, blocking_calls
from kinetoscope.analysis.stats import trace_metrics
from kinetoscope.analysis.syncs import sync_sites

from ..conftest import corpus, kernel, launch, op, write_trace


def _copy(name, ts, dur, correlation):
    event = kernel(name, ts, dur, correlation)
    event["cat"] = "gpu_memcpy"
    return event


def _item_steps(path, copy_name="Memcpy DtoH (Device -> Pageable)"):
    """Three 1 ms steps: a GEMM runs 575 us on the device while the host, right after
    launching it, reads a scalar: aten::item -> cudaMemcpyAsync (the copy runs after the
    GEMM) + a 3 us cudaStreamSynchronize."""
    events, corr = [], 1
    for n in range(3):
        t0 = n * 1000
        events += [
            op(f"ProfilerStep#{n}", t0, 1000, cat="user_annotation"),
            op("aten::mm", t0 + 1, 20),
            launch(t0 + 5, 10, correlation=corr),
            kernel("volta_sgemm_128x64_nn", t0 + 25, 575, correlation=corr),
            op("aten::item", t0 + 30, 590),
            op("aten::_local_scalar_dense", t0 + 31, 588),
            launch(t0 + 32, 578, correlation=corr + 1, name="cudaMemcpyAsync"),
            _copy(copy_name, t0 + 600, 5, correlation=corr + 1),
            launch(t0 + 612, 3, correlation=corr + 2, name="cudaStreamSynchronize"),
        ]
        corr += 3
    return kinetoscope.load(write_trace(path, events))


def test_pageable_copy_behind_item_is_sync_wait_and_sync_bound(tmp_path):
    trace = _item_steps(tmp_path / "t.json")
    # per step the host blocks 578 us in the copy and 3 us in the synchronize (the step's
    # sync wait); the old account counted only the synchronize. In the window account only
    # the part with every stream idle is the syncs' own: the share metric says that
    m = trace_metrics(trace)
    assert m["sync_wait_us"] == pytest.approx(581.0)
    assert m["sync_share"] < 0.02
    sites = sync_sites(trace)
    assert [(trace.name(s.index), s.kind, s.wait_us) for s in sites] == [
        ("aten::item", "scalar read", 581.0)
    ] * 3
    report = kinetoscope.explain(trace)
    # but the host waits on a busy device: the GEMM runs 25-600 us and the copy 600-605 us
    # of each step while the host blocks 32-610 us. In the window account that is the
    # device's time; only the synchronize after the copy (3 us a step, device idle) and
    # the few us between the copy's end and the host's next call are the waits' own cost,
    # so the verdict is the device's share (58%), not sync-bound
    assert report.verdict.regime == "mixed"
    assert report.verdict.account["device"] == pytest.approx(0.58, abs=1e-3)
    assert report.verdict.account["sync_stall"] < 0.02
    finding = next(f for f in report.findings if f.id == "host-sync")
    # the copy held the host 578 of the 581 us: the site is named by it, not by the 3 us
    # synchronize after it
    assert any(
        "-> cudaMemcpyAsync (device-to-pageable copy)" in e.text and e.name == "aten::item"
        for e in finding.evidence
    )


def test_pinned_copy_that_returns_at_once_is_not_a_wait(tmp_path):
    # the same step with the copy into pinned memory and a call that returns after 10 us:
    # no contract and no timing says it waited; only the synchronize blocks
    events = [
        op("ProfilerStep#0", 0, 1000, cat="user_annotation"),
        op("aten::mm", 1, 20),
        launch(5, 10, correlation=1),
        kernel("volta_sgemm_128x64_nn", 25, 575, correlation=1),
        op("aten::copy_", 30, 12),
        launch(31, 10, correlation=2, name="cudaMemcpyAsync"),
        _copy("Memcpy DtoH (Device -> Pinned)", 600, 5, correlation=2),
    ]
    trace = kinetoscope.load(write_trace(tmp_path / "t.json", events))
    assert blocking_calls(trace).tolist() == []


@pytest.mark.parametrize(("end_gap", "waited"), [(5.0, True), (WAKE_US + 30.0, False)])
def test_a_call_of_any_name_waited_when_it_ends_with_the_queued_work(tmp_path, end_gap, waited):
    # cudaFree (no name rule) starts while a kernel queued before it runs and returns
    # `end_gap` us after that kernel ends
    events = [
        op("ProfilerStep#0", 0, 1000, cat="user_annotation"),
        launch(5, 10, correlation=1),
        kernel("volta_sgemm_128x64_nn", 20, 600, correlation=1),
        launch(30, 590 + end_gap, correlation=2, name="cudaFree"),
    ]
    trace = kinetoscope.load(write_trace(tmp_path / "t.json", events))
    assert (trace.name_index["cudaFree"] in trace.name_id[blocking_calls(trace)]) == waited


@pytest.mark.parametrize(
    ("relative", "seconds"),
    [("gpu/alexnet_train.json.gz", 3.06), ("gpu/simple_add_a100.json.gz", 4.22)],
)
def test_a_slow_launch_is_not_a_wait(relative, seconds):
    # the first cudaLaunchKernel of cuDNN's computeOffsetsKernel lasts seconds (lazy module
    # loading); its own kernel runs at its very end and nothing queued before it was running
    trace = kinetoscope.load(corpus(relative))
    slow = [i for i in trace.launches.tolist() if trace.dur[i] > 1e6]
    assert len(slow) == 1 and trace.dur[slow[0]] / 1e6 == pytest.approx(seconds, abs=0.01)
    assert slow[0] not in blocking_calls(trace).tolist()


def test_whole_window_account_counts_the_final_synchronize():
    # no ProfilerStep: the 11.87 ms hipDeviceSynchronize of the 13.28 ms window is host time
    # blocked on the device (it was "dispatch + launch" before); the device ran during it:
    # the device's time in the account, so the verdict is compute-bound, never sync-bound
    trace = kinetoscope.load(corpus("gpu/tracelens_torch_compile_triton__trace.json.gz"))
    (flush,) = [i for i in blocking_calls(trace).tolist() if trace.dur[i] > 11_000]
    assert trace.dur[flush] == pytest.approx(11870.7, rel=1e-3)
    m = trace_metrics(trace)
    assert m["device_busy_ratio"] > 0.9 and m["sync_share"] < 0.01
    assert kinetoscope.explain(trace).verdict.regime == "compute-bound"


def test_a_pageable_upload_that_waited_for_its_stream_is_a_wait(tmp_path):
    # a host-to-device copy from pageable memory may have to wait for its stream: called
    # while the GEMM queued before it runs, it returns 4 us after its own copy (which ran
    # right after the GEMM): 596 us waiting. A call as long, made after the GEMM ended and
    # returning 4 us after its own copy too, began with the device idle: no wait
    def trace_with(call_ts, copy_ts):
        events = [
            op("ProfilerStep#0", 0, 2000, cat="user_annotation"),
            launch(5, 10, correlation=1),
            kernel("volta_sgemm_128x64_nn", 20, 600, correlation=1),
            launch(call_ts, copy_ts + 6 - call_ts, correlation=2, name="cudaMemcpyAsync"),
            _copy("Memcpy HtoD (Pageable -> Device)", copy_ts, 2, correlation=2),
        ]
        return kinetoscope.load(write_trace(tmp_path / f"t{call_ts}.json", events))

    waited = trace_with(30, 620)
    assert [waited.name(i) for i in blocking_calls(waited)] == ["cudaMemcpyAsync"]
    idle = trace_with(700, 1290)
    assert idle.dur[idle.name_id == idle.name_index["cudaMemcpyAsync"]][0] == 596.0
    assert blocking_calls(idle).tolist() == []


@pytest.mark.parametrize(
    ("name", "blocking"),
    [
        ("cudaDeviceSynchronize", True),
        ("cudaStreamSynchronize", True),
        ("cuEventSynchronize", True),
        ("hipStreamSynchronize", True),
        ("cudaMemcpy", True),
        ("cudaMemcpyToSymbol", True),
        ("cuMemcpyDtoH_v2", True),
        ("hipMemcpy", True),
        ("hipMemcpyWithStream", True),
        ("cudaMemcpyAsync", False),  # blocking only into pageable memory: by its copy
        ("cudaMemcpy2DAsync", False),
        ("cuMemcpyHtoDAsync_v2", False),
        ("hipMemcpyAsync", False),
        ("cudaStreamWaitEvent", False),  # the device waits, the host returns at once
        ("cudaLaunchKernel", False),
    ],
)
def test_blocking_by_contract(name, blocking):
    from kinetoscope.analysis.blocking import named_blocking

    assert named_blocking(name) == blocking
