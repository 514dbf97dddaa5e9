"""CPU-lane rules on real traces (corpus and torch-recorded) and on the series' figures."""

from __future__ import annotations

import statistics

import pytest

import kinetoscope
from kinetoscope.analysis.cold_start import step_walls
from kinetoscope.trace import load

from ..conftest import corpus, kernel, launch, op, write_trace
from ..torch_traces import torch_traces  # noqa: F401 - fixture

BERT = "gpu/tracelens_h100__gaunernst_bert-small-uncased__1016001.json.gz"
RESNET_NS = "gpu/resnet_train_ns.pt.trace.json.gz"
TINY_BLOCK = "gpu/tiny_transformer_block_h100.pt.trace.json.gz"


def run(path, rule_id, **config):
    report = kinetoscope.explain(
        path, config={rule_id: config} if config else None, rules=[rule_id]
    )
    return [f for f in report.findings if f.id == rule_id], report


# ---- cold-start -------------------------------------------------------------


def test_cold_start_on_a_torch_trace_without_warmup(torch_traces):  # noqa: F811
    # On an idle machine step 1 of this trace is 7-100x the later ones (profiler start, thread
    # pools), but on a loaded one any step can stretch, so the test checks the rule's two
    # conditions against the recorded step walls instead of assuming the outcome: more than
    # 1.5x the later steps' median, and longer than the slowest of them (a full run had a
    # first step 1.5x the median yet shorter than a later step stretched by a preemption).
    findings, report = run(torch_traces["cold"], "cold-start")
    walls = [w.wall_us for w in step_walls(load(torch_traces["cold"]))]
    assert len(walls) == len(report.steps) == 3
    first, later = walls[0], walls[1:]
    factor = first / statistics.median(later)
    assert len(findings) == (1 if factor > 1.5 and first > max(later) else 0)
    if findings:
        m = findings[0].measured
        assert m["factor"] == pytest.approx(factor, rel=1e-3)
        assert [e.step for e in findings[0].evidence] == [s.number for s in report.steps]


def test_cold_start_fires_on_corpus_first_step():
    # steps last 1.280, 0.860 and 0.786 ms: 1280 / median(860, 786) = 1.56x > 1.5x
    findings, _ = run(corpus(TINY_BLOCK), "cold-start")
    assert len(findings) == 1
    assert findings[0].measured["factor"] == pytest.approx(1280 / 823, rel=1e-3)
    assert findings[0].impact_us == pytest.approx((1280 - 823) / 3, rel=1e-3)


def test_cold_start_silent_when_the_first_step_is_short():
    # resnet_train_ns: the first step (35 ms) is the shortest of five
    findings, report = run(corpus(RESNET_NS), "cold-start")
    assert findings == [] and report.not_checked == []


def test_cold_start_needs_three_steps():
    findings, report = run(corpus(BERT), "cold-start")
    assert findings == []
    assert [s.id for s in report.not_checked] == ["cold-start"]
    assert "3 profiled steps" in report.not_checked[0].reason


# ---- dispatch-dead-window --------------------------------------------------


def dead_window_trace(path, gaps: list[float]):
    """Steps #2.. each holding a `matmul_add` annotation whose first op starts `gap` us later."""
    events, t = [], 0.0
    for k, gap in enumerate(gaps):
        events.append(op(f"ProfilerStep#{k + 2}", t, 400.0, cat="user_annotation"))
        events.append(op("matmul_add", t + 1.0, 390.0, cat="user_annotation"))
        events.append(op("aten::matmul", t + 1.0 + gap, 20.0))
        t += 500.0
    return write_trace(path, events)


def test_dead_window_series_figures(tmp_path):
    # the series: 227.757 us in step #2 vs 5.521 and 4.488 us in the steps after
    path = dead_window_trace(tmp_path / "dead.json", [227.757, 5.521, 4.488])
    findings, _ = run(path, "dispatch-dead-window")
    assert len(findings) == 1
    f = findings[0]
    assert f.measured["annotation"] == "matmul_add"
    assert f.measured["gap_us"] == pytest.approx(227.757)
    assert f.measured["later_median_gap_us"] == pytest.approx((5.521 + 4.488) / 2, abs=1e-3)
    assert [(e.step, round(e.value, 3)) for e in f.evidence] == [
        (2, 227.757),
        (3, 5.521),
        (4, 4.488),
    ]
    assert f.evidence[0].ts_us == pytest.approx(1.0)  # relative to the trace start


def test_dead_window_silent_when_gaps_are_steady(tmp_path):
    path = dead_window_trace(tmp_path / "steady.json", [6.0, 5.521, 4.488])
    assert run(path, "dispatch-dead-window")[0] == []
    assert run(corpus(TINY_BLOCK), "dispatch-dead-window")[0] == []


def test_dead_window_fires_on_corpus():
    # resnet_train_ns step #101 waits 850 us before its first op; later steps ~149 us
    findings, _ = run(corpus(RESNET_NS), "dispatch-dead-window")
    assert len(findings) == 1
    m = findings[0].measured
    assert m["gap_us"] == pytest.approx(850.25, abs=0.01)
    assert m["gap_us"] > 5 * m["later_median_gap_us"]


# ---- heavyweight-launch -----------------------------------------------------


def test_heavyweight_launch_fires_where_occupancy_queries_precede_launches():
    findings, _ = run(corpus("gpu/alexnet_train.json.gz"), "heavyweight-launch")
    assert len(findings) == 1
    m = findings[0].measured
    assert m["adaptive_launches"] == 8 and m["occupancy_queries"] == 18
    assert m["mechanical_launches"] > 0
    assert any(e.ts_us is not None and e.name for e in findings[0].evidence)


def test_heavyweight_launch_silent_without_occupancy_queries():
    assert run(corpus(BERT), "heavyweight-launch")[0] == []


def _occupancy_then_launch(path, with_kernel: bool):
    """aten::mm: an occupancy query, then a launch (correlation 2) whose kernel is recorded
    or not; an elementwise launch (correlation 1) links, so the trace does link launches."""
    gemv = (
        "std::enable_if<!(false), void>::type internal::gemvx::kernel<int, int, float, float, "
        "float, float, false, true, true, false, 7, false, cublasGemvParamsEx<int, "
        "cublasGemvTensorStridedBatched<float const>, cublasGemvTensorStridedBatched<float "
        "const>, cublasGemvTensorStridedBatched<float>, float> >(cublasGemvParamsEx<int, "
        "cublasGemvTensorStridedBatched<float const>, cublasGemvTensorStridedBatched<float "
        "const>, cublasGemvTensorStridedBatched<float>, float>)"
    )
    events = [
        op("ProfilerStep#1", 0.0, 100.0, cat="user_annotation"),
        op("aten::add", 2.0, 10.0),
        launch(3.0, 4.0, correlation=1),
        kernel("void at::native::vectorized_elementwise_kernel<4>(int)", 20.0, 5.0, 1),
        op("aten::mm", 20.0, 30.0),
        op("cudaOccupancyMaxActiveBlocksPerMultiprocessor", 21.0, 2.0, cat="cuda_runtime"),
        launch(25.0, 4.0, correlation=2),
    ]
    if with_kernel:
        events.append(kernel(gemv, 40.0, 9.0, 2))
    return write_trace(path, events)


def test_heavyweight_launch_says_a_dropped_kernel_in_words(tmp_path):
    # a launch with a correlation id and no device event in a trace whose other launches
    # link: the profiler lost the record (before: "before launching ?")
    path = _occupancy_then_launch(tmp_path / "t.json", False)
    findings, report = run(path, "heavyweight-launch")
    texts = [e.text for e in findings[0].evidence]
    assert texts[0] == (
        "1 occupancy query before launching a kernel not recorded (dropped by the profiler)"
    )
    assert not any("?" in t for t in texts)
    # and the trace-quality section counts it
    dropped = [i for i in report.to_dict()["quality"]["issues"] if i["id"] == "dropped-events"]
    assert dropped and dropped[0]["count"] == 1


def test_heavyweight_launch_names_a_recorded_kernel_by_its_display_name(tmp_path):
    findings, _ = run(_occupancy_then_launch(tmp_path / "t.json", True), "heavyweight-launch")
    text = findings[0].evidence[0].text
    assert text.startswith("1 occupancy query before launching internal::gemvx::kernel<int,")
    assert "dropped" not in text and "enable_if" not in text


def test_heavyweight_launch_does_not_call_a_trace_without_kernels_dropped():
    # a CUPTI range-profiling run records no kernels at all: nothing links, so no launch is
    # said to be dropped (a drop cannot be told from ids the trace never pairs)
    findings, _ = run(corpus("gpu/cupti_counters.json.gz"), "heavyweight-launch")
    texts = [e.text for e in findings[0].evidence]
    assert "a kernel the trace does not link to its launch" in texts[0]
    assert not any("dropped" in t or "?" in t for t in texts)


# ---- sync-flush --------------------------------------------------------------


def sync_trace(path, sync_us: float, work_us: float):
    """A short step, then a final cudaDeviceSynchronize over `work_us` of device work."""
    events = [
        op("ProfilerStep#1", 0.0, 50.0, cat="user_annotation"),
        op("aten::add", 5.0, 20.0),
        launch(6.0, 4.0, correlation=1),
        op("cudaDeviceSynchronize", 60.0, sync_us, cat="cuda_runtime"),
        kernel("elementwise_add", 61.0, work_us, correlation=1),
    ]
    return write_trace(path, events)


def test_sync_flush_series_figure(tmp_path):
    # the series: a 1.78 ms final sync covering 26 us of GPU work is ~98% idle
    findings, _ = run(sync_trace(tmp_path / "sync.json", 1780.0, 26.0), "sync-flush")
    assert len(findings) == 1
    f = findings[0]
    assert f.measured["sync_us"] == pytest.approx(1780.0)
    assert f.measured["device_work_us"] == pytest.approx(26.0)
    assert f.measured["idle_share"] == pytest.approx(1 - 26 / 1780, abs=1e-4)  # 98.5%
    assert "98.5% idle" in f.title and "threshold 90%" in f.title


def test_sync_flush_silent_when_the_sync_waits_on_real_work(tmp_path):
    assert run(sync_trace(tmp_path / "busy.json", 1780.0, 1700.0), "sync-flush")[0] == []
    # resnet_train_ns: the final 89.2 ms sync covers 88.2 ms of device work
    assert run(corpus(RESNET_NS), "sync-flush")[0] == []


def test_sync_flush_fires_on_corpus():
    # compare_base: a 582 us final cudaDeviceSynchronize with no device work inside it
    findings, _ = run(corpus("gpu/compare_base.json.gz"), "sync-flush")
    assert len(findings) == 1
    assert findings[0].measured["sync_us"] == 582.0
    assert findings[0].measured["idle_share"] == 1.0


def test_sync_flush_not_checked_without_device(torch_traces):  # noqa: F811
    findings, report = run(torch_traces["warm"], "sync-flush")
    assert findings == [] and [s.id for s in report.not_checked] == ["sync-flush"]


# ---- hidden-memcpy ---------------------------------------------------------------


def test_hidden_memcpy_addmm_bias_seed(tmp_path):
    # the series: addmm seeds its output with the bias, a DtoD copy before the GEMM
    memcpy = kernel("Memcpy DtoD (Device -> Device)", 20.0, 33.0, correlation=1, bytes=32 << 20)
    memcpy["cat"] = "gpu_memcpy"
    events = [
        op("ProfilerStep#1", 0.0, 100.0, cat="user_annotation"),
        op("aten::addmm", 2.0, 60.0),
        op("aten::copy_", 4.0, 10.0),
        launch(5.0, 5.0, correlation=1, name="cudaMemcpyAsync"),
        launch(20.0, 5.0, correlation=2),
        memcpy,
        kernel("ampere_sgemm_128x64_tn", 55.0, 40.0, correlation=2),
    ]
    findings, _ = run(write_trace(tmp_path / "addmm.json", events), "hidden-memcpy")
    assert len(findings) == 1
    f = findings[0]
    assert "aten::addmm" in f.title
    assert f.impact_us == pytest.approx(33.0)
    assert f.evidence[0].name.startswith("Memcpy DtoD") and f.evidence[0].ts_us == 20.0
    assert "1 x Memcpy DtoD (32.0 MB) issued by aten::addmm" in f.evidence[0].text


def test_hidden_memcpy_fires_on_corpus():
    # switch transformer: aten::masked_fill clones (DtoD) and aten::is_nonzero reads back (DtoH)
    findings, _ = run(corpus("gpu/switch_transformer_moe_a100.json.gz"), "hidden-memcpy")
    assert len(findings) == 1
    text = " ".join(e.text for e in findings[0].evidence)
    assert "aten::masked_fill" in text and "aten::is_nonzero" in text
    assert findings[0].measured["copies"] == 30


def test_hidden_memcpy_silent_for_copies_the_user_wrote():
    # workers0: every copy is an explicit .to(device) (aten::copy_ directly under the step)
    findings, _ = run(corpus("gpu/resnet50_dataloader_workers0.pt.trace.json.gz"), "hidden-memcpy")
    assert findings == []
    assert run(corpus(TINY_BLOCK), "hidden-memcpy")[0] == []


def test_dead_window_on_a_torch_trace_matches_the_recorded_gaps(torch_traces):  # noqa: F811
    # timing-dependent like cold-start above: recompute the gaps independently from the
    # events (first event starting inside each matmul_add annotation) and check the verdict
    import numpy as np

    trace = kinetoscope.load(torch_traces["cold"])
    ann = [i for i in range(len(trace)) if trace.name(i) == "matmul_add"]
    gaps = []
    for i in sorted(ann, key=lambda i: trace.ts[i]):
        inside = (
            (trace.ts > trace.ts[i]) & (trace.ts < trace.end[i]) & (trace.lane == trace.lane[i])
        )
        gaps.append(float(trace.ts[inside].min() - trace.ts[i]))
    assert len(gaps) == 3
    # the first step whose gap is > 20 us and > 5x the median of the steps after it
    dead = [
        g for k, g in enumerate(gaps[:-1]) if g > 20.0 and g > 5 * float(np.median(gaps[k + 1 :]))
    ]
    findings, _ = run(torch_traces["cold"], "dispatch-dead-window")
    mine = [f for f in findings if f.measured["annotation"] == "matmul_add"]
    assert len(mine) == (1 if dead else 0)
    if mine:
        assert mine[0].measured["gap_us"] == pytest.approx(dead[0], abs=1e-3)
