"""Device work belongs to the step that launched it, however late the device runs it.

The series' matmul + add (3 steps, 2 kernels each) recorded where the device
lags: every kernel starts after the host finished the last step. Placing
kernels by device timestamps would find no device work in any step and call
the trace host-only; attributed through their launch, each step owns its two
kernels and the verdict is the device's.
"""

from __future__ import annotations

import pytest

import kinetoscope
from kinetoscope.analysis.stats import trace_stats
from kinetoscope.testing import assert_trace

from ..conftest import kernel, launch, op, write_trace

STEP_US = 100.0


def lagging_matmul_add(path, gemm_us: float, add_us: float):
    """3 host steps of aten::mm + aten::add (one launch each); all 6 kernels run back to
    back after the last host step ends (at 300 us), as on a device that lags."""
    events, corr = [], 1
    device_t = 3 * STEP_US + 50.0
    for n in range(3):
        t0 = n * STEP_US
        events.append(op(f"ProfilerStep#{n + 1}", t0, STEP_US, cat="user_annotation"))
        for name, ts, dur in (("aten::mm", t0 + 5, 40.0), ("aten::add", t0 + 50, 40.0)):
            events.append(op(name, ts, dur))
            events.append(launch(ts + 5, 10.0, correlation=corr))
            k_dur = gemm_us if name == "aten::mm" else add_us
            k_name = "ampere_sgemm_128x64_nn" if name == "aten::mm" else "elementwise_add"
            events.append(kernel(k_name, device_t, k_dur, correlation=corr))
            device_t += k_dur + 1.0
            corr += 1
    return write_trace(path, events)


def test_small_kernels_after_the_last_step_are_overhead_bound(tmp_path):
    path = lagging_matmul_add(tmp_path / "small.json", gemm_us=3.0, add_us=2.0)
    report = kinetoscope.explain(path)
    # each step: host busy 80 us (two 40 us ops), device 3 + 2 = 5 us -> 6% < 25%
    assert [s.kernels for s in report.steps] == [2, 2, 2]
    assert [s.device_busy_us for s in report.steps] == pytest.approx([5.0, 5.0, 5.0])
    assert report.verdict.regime == "overhead-bound"
    assert report.metrics["kernels_per_step"] == 2
    assert_trace(path, "kernels_per_step == 2", regime="overhead-bound")


def test_big_kernels_after_the_last_step_are_compute_bound(tmp_path):
    path = lagging_matmul_add(tmp_path / "big.json", gemm_us=4000.0, add_us=300.0)
    report = kinetoscope.explain(path)
    # device busy 4300 us per 100 us step: the device sets the pace; the window runs until
    # the work the steps launched is done, and the device holds nearly all of it
    assert [s.device_busy_us for s in report.steps] == pytest.approx([4300.0] * 3)
    assert report.metrics["device_busy_ratio"] == pytest.approx(12900 / (350 + 12905), rel=1e-3)
    assert report.verdict.regime == "compute-bound"
    assert_trace(path, "kernels_per_step == 2", regime="compute-bound")


def test_unlinked_device_work_uses_the_device_step_annotation(tmp_path):
    # a kernel with no launch link, inside the device-side copy of ProfilerStep#2, which
    # runs after the host's step 2: it belongs to step 2, not to step 3 (its own start)
    events = [
        op("ProfilerStep#1", 0.0, 100.0, cat="user_annotation"),
        op("ProfilerStep#2", 100.0, 100.0, cat="user_annotation"),
        op("ProfilerStep#3", 200.0, 100.0, cat="user_annotation"),
        op("aten::add", 10.0, 20.0),
        launch(12.0, 5.0, correlation=1),
        kernel("elementwise_add", 20.0, 5.0, correlation=1),
        {
            "ph": "X",
            "cat": "gpu_user_annotation",
            "name": "ProfilerStep#2",
            "pid": 0,
            "tid": 7,
            "ts": 240.0,
            "dur": 30.0,
            "args": {},
        },
        {
            "ph": "X",
            "cat": "kernel",
            "name": "orphan_kernel",
            "pid": 0,
            "tid": 7,
            "ts": 250.0,
            "dur": 10.0,
            "args": {"stream": 7, "device": 0},
        },
    ]
    trace = kinetoscope.load(write_trace(tmp_path / "t.json", events))
    steps = trace_stats(trace).steps
    assert [s.kernels for s in steps] == [1, 1, 0]
    assert [s.device_busy_us for s in steps] == pytest.approx([5.0, 10.0, 0.0])
