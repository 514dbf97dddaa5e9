"""Kernel shares count the active window, as the verdict and the step table do."""

from __future__ import annotations

from dataclasses import replace

import numpy as np

import kinetoscope
from kinetoscope.analysis.gpu_lane import kernel_totals
from kinetoscope.rules.engine import run_rules

from ..conftest import kernel, launch, op, write_trace


def _trace(tmp_path, gemm_us: float = 60):
    events = [
        op("aten::fill_", 0, 30),  # before the step: a warm-up fill the window must not count
        launch(5, 5, correlation=1),
        kernel("void fill_kernel<float>(float*)", 12, 500, correlation=1),
        op("ProfilerStep#1", 600, 200, cat="user_annotation"),
        op("aten::mm", 610, 50),
        launch(620, 10, correlation=2),
        kernel("ampere_sgemm_128x64_nn", 640, gemm_us, correlation=2),
        op("aten::mm", 700, 50),
        launch(710, 10, correlation=3),
        kernel("ampere_sgemm_128x64_nn", 720, gemm_us, correlation=3),
    ]
    return kinetoscope.load(write_trace(tmp_path / "t.json", events))


def test_kernel_totals_count_only_kernels_launched_in_the_steps(tmp_path):
    rows, total = kernel_totals(_trace(tmp_path))
    assert [(r.calls, r.device_us) for r in rows] == [(2, 120.0)] and total == 120.0


def test_kernel_name_and_dispatch_chain_shares_are_of_the_window(tmp_path):
    trace = _trace(tmp_path)
    found = {f.id: f for f in run_rules(trace, only=["kernel-name", "dispatch-chain"]).findings}
    name_ev = found["kernel-name"].evidence
    assert len(name_ev) == 1 and "in 2 calls (100% of kernel time)" in name_ev[0].text
    (chain,) = found["dispatch-chain"].evidence
    assert "in 2 calls, 100% of kernel time" in chain.text


def test_host_cost_by_step_and_whether_the_device_hides_it(tmp_path):
    from kinetoscope.analysis.stepmap import host_cost_by_step
    from kinetoscope.rules.impact import host_cost_hidden

    trace = _trace(tmp_path)
    mm = trace.name_index["aten::mm"]
    rows = host_cost_by_step(trace, np.flatnonzero(trace.name_id == mm))
    assert [(r.step.number, r.calls, r.us) for r in rows] == [(1, 2, 100.0)]
    # host busy 100 us (the two mm ops; the step span itself is not work), device 120 us:
    # the device hides the host's time; with a busier host it shows
    (step,) = [r.step for r in rows]
    assert (step.host_busy_us, step.device_busy_us) == (100.0, 120.0)
    assert host_cost_hidden([step])
    assert not host_cost_hidden([replace(step, host_busy_us=150.0)])


def test_kernels_without_durations_have_no_share_and_break_no_rule(tmp_path):
    """Kernels whose events lost their `dur` (read as 0) sum to no kernel time: the two
    rules that give each kernel's share of it say none was recorded. A damaged trace made
    both a ZeroDivisionError (the HTML fuzz run found it, strict rules on)."""
    trace = _trace(tmp_path, gemm_us=0)  # the fill before the step is outside the window
    out = run_rules(trace, only=["kernel-name", "dispatch-chain"])  # strict: a raise fails
    found = {f.id: f for f in out.findings}
    (name_ev,) = found["kernel-name"].evidence
    assert "in 2 calls (no kernel time recorded)" in name_ev.text
    assert found["kernel-name"].title.endswith(
        "by library: none recorded (the kernels' durations are 0 or missing)"
    )
    assert found["kernel-name"].measured["library_share"] == {"cuBLAS": None}
    (chain,) = found["dispatch-chain"].evidence
    assert "in 2 calls, no kernel time recorded]" in chain.text
