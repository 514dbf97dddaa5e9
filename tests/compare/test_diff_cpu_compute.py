"""diff on CPU runs weighs the compute part: the math moved out of dispatch (issue 19)."""

from __future__ import annotations

from kinetoscope.analysis.stats import trace_stats
from kinetoscope.compare.decompose import cause, decompose
from kinetoscope.trace import load

from ..conftest import corpus, op, write_trace
from ..precision_traces import precision_traces  # noqa: F401 - fixture


def _cpu_run(path, mm_us: float):
    """Five CPU steps of `matmul_add`'s shape, built to have the property under test:
    `aten::mm`'s self time (the GEMM) is `mm_us`, everything around it (the step's
    Python, `aten::matmul`'s glue, the `aten::add`) the same few tens of us in both
    runs, with a 1-3 us step-to-step wobble so each part has a spread."""
    events = []
    start = 0.0
    for step in range(1, 6):
        wobble = step % 3
        events += [
            op(f"ProfilerStep#{step}", start, mm_us + 60 + wobble),
            op("aten::matmul", start + 10, mm_us + 12),
            op("aten::mm", start + 12, mm_us + wobble),
            op("aten::resolve_conj", start + 13, 1),
            op("aten::add", start + mm_us + 30, 8),
        ]
        start += mm_us + 100
    return trace_stats(load(write_trace(path, events)))


def test_cpu_diff_names_compute_as_the_cause(tmp_path):
    # the GEMM grows from 20 us to 100 ms a step and nothing else moves: the step's growth
    # is compute, not dispatch (a recorded 16 vs 1024 matmul has the same shape, but how
    # much of its growth a loaded machine spends outside the GEMM varies from run to run)
    a = _cpu_run(tmp_path / "small.json", 20.0)
    b = _cpu_run(tmp_path / "large.json", 100_000.0)
    parts = decompose(a, b)
    assert [c.key for c in parts][:3] == ["step_time_us", "device_busy_per_step_us", "compute_us"]
    step = parts[0]
    compute = next(c for c in parts if c.key == "compute_us")
    assert step.status == compute.status == "loss"
    assert compute.delta_us == step.delta_us == 100_000 - 20
    assert all(c.status == "none" for c in parts if c.key in ("dispatch_us", "other_us"))
    assert cause(parts).key == "compute_us"


def test_recorded_cpu_runs_have_a_compute_part(precision_traces):  # noqa: F811
    # matmul_add at 16 vs 1024 on one CPU thread, as recorded: the compute part is measured
    # (its size is the constructed test's business; measured times vary with the load)
    a, b = (trace_stats(load(precision_traces[n])) for n in ("matmul_16", "matmul_1024"))
    parts = decompose(a, b)
    assert [c.key for c in parts][:3] == ["step_time_us", "device_busy_per_step_us", "compute_us"]
    compute = next(c for c in parts if c.key == "compute_us")
    assert compute.a_us > 0 and compute.b_us > 0


def test_gpu_diff_has_no_compute_part():
    stats = trace_stats(load(corpus("gpu/compare_base.json.gz")))
    assert "compute_us" not in [c.key for c in decompose(stats, stats)]
