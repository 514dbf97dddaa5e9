"""data-bound, sync-bound, compile-window: the verdict names where host time goes."""

from __future__ import annotations

import pytest

import kinetoscope
from kinetoscope.analysis.stats import trace_stats

from ..conftest import corpus, kernel, launch, op, write_trace

WORKERS0 = "gpu/resnet50_dataloader_workers0.pt.trace.json.gz"
WORKERS4 = "gpu/resnet50_dataloader_workers4.pt.trace.json.gz"


def test_resnet50_without_workers_is_data_bound():
    report = kinetoscope.explain(corpus(WORKERS0))
    m = report.metrics
    # 6 steps of ~176 ms each spend 62.6-73.4 ms in
    # enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__ (38-41%), of which ~32%
    # of the window with the V100 idle (the window account); dispatch is 52% of the step
    # but only ~9% while the device idles, and the device is busy 57%
    assert 0.3 < m["data_share"] < 0.45
    assert m["dispatch_share"] < 0.15 and m["device_busy_ratio"] < 0.8
    assert report.verdict.regime == "data-bound"
    # one cause, one finding: the verdict's data-bound folds into dataloader-bound (rules.merge)
    (wait,) = [f for f in report.findings if f.id.endswith("-bound")]
    assert wait.id == "dataloader-bound" and wait.merged == ["data-bound"]
    assert "data wait 3" in report.verdict.summary and "dispatch + launch" in report.verdict.summary


def test_resnet50_with_workers_is_not_data_bound():
    report = kinetoscope.explain(corpus(WORKERS4))
    # with num_workers=4 the wait is 0.1-4.3 ms of ~125 ms steps
    assert report.metrics["data_share"] < 0.05
    assert report.verdict.regime != "data-bound"
    assert "data-bound" not in [f.id for f in report.findings]


def _sync_loop(path, sync_us: float, device_us: float):
    """3 steps: a 10 us op launching one kernel, then cudaStreamSynchronize of `sync_us`."""
    events = []
    for n in range(3):
        t0 = n * 200.0
        events += [
            op(f"ProfilerStep#{n}", t0, 200.0, cat="user_annotation"),
            op("aten::mul", t0 + 5, 10.0),
            launch(t0 + 7, 4.0, correlation=n + 1),
            kernel("mul_kernel", t0 + 20, device_us, correlation=n + 1),
            op("aten::item", t0 + 20, sync_us + 4),
            op("aten::_local_scalar_dense", t0 + 21, sync_us + 2),
            launch(t0 + 22, sync_us, correlation=100 + n, name="cudaStreamSynchronize"),
        ]
    return write_trace(path, events)


def test_blocking_item_per_step_is_sync_bound(tmp_path):
    # 120 us of each 200 us step blocked in cudaStreamSynchronize under aten::item while
    # the device works 40 us: 38 us of the wait are the kernel's (the device's time), the
    # other 82 us the wait's own with every stream idle (sync stall, 41% of the window)
    report = kinetoscope.explain(_sync_loop(tmp_path / "s.json", 120.0, 40.0))
    assert report.metrics["sync_share"] == pytest.approx(0.41)
    assert report.metrics["syncs_per_step"] == 1
    assert report.verdict.regime == "sync-bound"
    # sync-bound folds into host-sync, which names the same wait site by site (rules.merge)
    f = next(f for f in report.findings if "sync-bound" in (f.id, *f.merged))
    assert any(e.name == "aten::item" for e in f.evidence)


def test_short_syncs_do_not_make_a_sync_bound_verdict(tmp_path):
    # 20 us blocked of 200 us, 12 us of them with the device idle: 6%, under the 30% minimum
    report = kinetoscope.explain(_sync_loop(tmp_path / "s.json", 20.0, 10.0))
    assert report.metrics["sync_share"] == pytest.approx(0.06)
    assert report.verdict.regime != "sync-bound"


def test_compile_in_window_is_compile_window(tmp_path):
    # one step, 80% of it inside Dynamo/Inductor compilation
    events = [
        op("ProfilerStep#1", 0.0, 1000.0, cat="user_annotation"),
        op("entire_frame_compile (dynamo_timed)", 10.0, 800.0),
        op("aten::add", 850.0, 20.0),
        launch(852.0, 4.0, correlation=1),
        kernel("add_kernel", 860.0, 5.0, correlation=1),
    ]
    trace = kinetoscope.load(write_trace(tmp_path / "c.json", events))
    assert trace_stats(trace).metrics()["compile_share"] == pytest.approx(0.8)
    report = kinetoscope.explain(trace)
    assert report.verdict.regime == "compile-window"
    assert "profile after warm-up" in report.verdict.summary


def test_warm_compiled_corpus_trace_is_not_compile_window():
    # the Triton example runs its compiled region without compiling in the window
    report = kinetoscope.explain(corpus("gpu/tracelens_torch_compile_triton__trace.json.gz"))
    assert report.metrics["compile_share"] == 0
    assert report.verdict.regime != "compile-window"
