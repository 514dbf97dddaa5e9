"""diff on CPU runs weighs the compute part: the math moved out of dispatch (issue 19)."""

from __future__ import annotations

from kinetoscope.analysis.stats import trace_stats
from kinetoscope.compare.decompose import cause, decompose
from kinetoscope.trace import load

from ..conftest import corpus
from ..precision_traces import precision_traces  # noqa: F401 - fixture


def test_cpu_diff_names_compute_as_the_cause(precision_traces):  # noqa: F811
    # matmul_add at 16 vs 1024 on one CPU thread: the GEMM grows 2.1 GFLOP / 8 kFLOP, so
    # the step's growth (~20 us -> ~100 ms) is compute, not dispatch
    a, b = (trace_stats(load(precision_traces[n])) for n in ("matmul_16", "matmul_1024"))
    parts = decompose(a, b)
    assert [c.key for c in parts][:3] == ["step_time_us", "device_busy_per_step_us", "compute_us"]
    compute = next(c for c in parts if c.key == "compute_us")
    assert compute.status == "loss" and compute.delta_us > 0.9 * parts[0].delta_us
    assert cause(parts).key == "compute_us"


def test_gpu_diff_has_no_compute_part():
    stats = trace_stats(load(corpus("gpu/compare_base.json.gz")))
    assert "compute_us" not in [c.key for c in decompose(stats, stats)]
