"""cold-start's "first-run" cause: in a window too short to compare steps, the first run
of repeated work (same kernel name, grid and block, or its launch call) far slower than
its later runs is a cold first iteration.

Expectations read from the traces (kernel groups by name/grid/block, durations in order):
- simple_add_a100 (no ProfilerStep: one window): ampere_sgemm_32x32_sliced1x4_tn runs 4
  times, the first 868 us against a 401 us median of the other 3 (2.2x, +467 us);
- ncompass_train_with_stack_h100nvl (one step, 384 kernels): no repeated group's first
  run is more than 3.2 us over its later median (the largest: sgemm_largek 20.9 vs 17.7 us).
"""

from __future__ import annotations

import kinetoscope
from kinetoscope.analysis.cold_start import first_runs
from kinetoscope.trace import load

from ..conftest import corpus


def _first_run_findings(relative: str):
    report = kinetoscope.explain(corpus(relative), rules=["cold-start"])
    return [f for f in report.findings if f.measured.get("cause") == "first-run"]


def test_cold_first_gemm_in_a_single_window_fires():
    (run, *_) = first_runs(load(corpus("gpu/simple_add_a100.json.gz")))
    trace = load(corpus("gpu/simple_add_a100.json.gz"))
    assert trace.name(run.index) == "ampere_sgemm_32x32_sliced1x4_tn"
    assert 400 < run.excess_us(trace) < 550
    # the window is a cold one (24.6 s of context creation): the cold first run is one of
    # the one-time costs the cold-window finding holds, not a finding of its own
    report = kinetoscope.explain(corpus("gpu/simple_add_a100.json.gz"))
    (window,) = [f for f in report.findings if f.id == "cold-window"]
    assert "cold-start" in window.merged
    assert any("first iteration" in e.text for e in window.evidence)
    assert _first_run_findings("gpu/simple_add_a100.json.gz") == []


def test_single_step_with_steady_repeats_does_not_fire():
    path = corpus("gpu/ncompass_train_with_stack_h100nvl.pt.trace.json.gz")
    assert first_runs(load(path)) == []
    assert _first_run_findings("gpu/ncompass_train_with_stack_h100nvl.pt.trace.json.gz") == []
