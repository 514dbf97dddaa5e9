"""Regime rules: the series' figures, exactly one regime per trace, verdict agreement."""

from __future__ import annotations

import pytest

import kinetoscope
from kinetoscope.rules.regime import REGIMES

from ..conftest import corpus, kernel, launch, op, write_trace
from ..torch_traces import torch_traces  # noqa: F401 - fixture


def matmul_add_trace(path, host_us: float, gemm_us: float, add_us: float, sync: bool = False):
    """One ProfilerStep: mm + add ops whose self times sum to `host_us`, two kernels.

    With `sync` the host's last 90% is a cudaDeviceSynchronize inside the add op's
    time budget, as a big-shape run waits on the device.
    """
    mm_us = host_us * 0.1 if sync else host_us / 2
    add_op_us = host_us - mm_us
    events = [
        # the step is exactly its two ops, so Self CPU total (the table) = host busy time
        op("ProfilerStep#1", 0.0, host_us, cat="user_annotation"),
        op("aten::mm", 0.0, mm_us),
        launch(1.0, 3.0, correlation=1),
        op("aten::add", mm_us, add_op_us),
        launch(1.0 + mm_us, 3.0, correlation=2),
        kernel("ampere_bf16_s16816gemm_bf16_64x64_nn", 5.0, gemm_us, correlation=1),
        kernel("elementwise_add", 5.0 + gemm_us + 1.0, add_us, correlation=2),
    ]
    if sync:
        events.append(op("cudaDeviceSynchronize", 5.0 + mm_us, add_op_us - 6.0, cat="cuda_runtime"))
    return write_trace(path, events)


def fired(report) -> list[str]:
    """The regime rules that fired, folded ones included (sync-bound folds into host-sync,
    data-bound into dataloader-bound: one cause, one finding)."""
    return [i for f in report.findings for i in (f.id, *f.merged) if i in REGIMES]


def test_series_small_matmul_is_overhead_bound(tmp_path):
    # Part 1, 64x64 bf16: Self CPU total 2.314 ms vs Self CUDA total 23.104 us
    path = matmul_add_trace(tmp_path / "small.json", 2314.0, 20.0, 3.104)
    report = kinetoscope.explain(path)
    assert report.metrics["host_time_us"] == pytest.approx(2314.0)
    assert report.metrics["device_busy_us"] == pytest.approx(23.104)
    assert report.verdict.regime == "overhead-bound"
    assert fired(report) == ["overhead-bound"]
    assert "23.1 us" in report.verdict.summary and "2.31 ms" in report.verdict.summary
    assert "1.0%" in report.verdict.summary  # GPU < 1% of CPU time, as the series says
    # the verdict ranks after the causes of its severity (rules/ranking.py): pick it by id
    finding = next(f for f in report.findings if f.id == "overhead-bound")
    assert finding.measured["threshold"] == 0.25
    # the two last lines of key_averages().table(), as the series quotes them
    assert any(
        "Self CPU total 2.31 ms vs Self device total 23.1 us" in e.text for e in finding.evidence
    )
    # the account: the step is all steady, the device holds 23.1 us of its 2.314 ms
    assert finding.measured["device_share_of_steady"] == pytest.approx(23.104 / 2314.0, rel=1e-3)


def test_series_large_matmul_is_compute_bound(tmp_path):
    # Part 1, 4096x4096: 4.908 ms vs 4.495 ms, the GEMM kernel dominates
    path = matmul_add_trace(tmp_path / "large.json", 4908.0, 4400.0, 95.0, sync=True)
    report = kinetoscope.explain(path)
    assert report.metrics["host_time_us"] == pytest.approx(4908.0)
    assert report.metrics["device_busy_us"] == pytest.approx(4495.0)
    assert report.verdict.regime == "compute-bound"
    assert fired(report) == ["compute-bound"]
    finding = next(f for f in report.findings if f.id == "compute-bound")
    top = [e for e in finding.evidence if e.name and e.step is None]  # kernels, not the step
    assert (
        top[0].name.startswith("ampere_bf16") and "97.9% of kernel time" in top[0].text
    )  # 4400 / 4495


def test_thresholds_move_the_verdict(tmp_path):
    path = matmul_add_trace(tmp_path / "large.json", 4908.0, 4400.0, 95.0, sync=True)
    # device busy 91.6% of the window: with compute-bound moved to 95% the device is no
    # longer saturated; the host's cudaDeviceSynchronize spans 90% of the step, but it
    # waits on a busy device for all but its last 406 us: the device's time in the account,
    # so no wait regime takes the verdict (the ledger called this sync-bound)
    report = kinetoscope.explain(path, config={"compute-bound": {"min_device_ratio": 0.95}})
    assert report.verdict.regime == "mixed" and fired(report) == ["mixed"]
    assert report.verdict.account["device"] == pytest.approx(4495.0 / 4908.0, rel=1e-3)
    report = kinetoscope.explain(
        path,
        config={"compute-bound": {"min_device_ratio": 0.95}, "external-wait": {"min_share": 0.05}},
    )
    # the sync's last 406 us wait with every stream idle and nothing queued: external
    assert report.verdict.regime == "external-wait" and fired(report) == ["external-wait"]
    report = kinetoscope.explain(path, config={"overhead-bound": {"max_device_ratio": 0.95}})
    assert report.verdict.regime == "overhead-bound"


@pytest.mark.parametrize(
    ("relative", "regime"),
    [
        # 309 us of device work against 2.114 ms of host time in a 4.4 ms window
        ("gpu/tracelens_h100__gaunernst_bert-small-uncased__1016001.json.gz", "overhead-bound"),
        # device busy 472 ms vs host 392 ms: the queue runs ahead of the host
        ("gpu/resnet_train_ns.pt.trace.json.gz", "compute-bound"),
        # 42.7 ms of the 62.6 ms window before the first and after the last event, 18.5 ms
        # more with nothing recorded: a capture too empty to judge
        ("gpu/cuda_event_sync_multi_stream.json.gz", "not-judged"),
        # no device lane at all
        ("cpu/cpu_only_rank34.pt.trace.json.gz", "host-only"),
    ],
)
def test_corpus_regimes(relative, regime):
    report = kinetoscope.explain(corpus(relative))
    assert report.verdict.regime == regime
    assert fired(report) == [regime]  # exactly one, and the one the verdict names


def test_generated_cpu_trace_is_judged_on_its_compute_share(torch_traces):  # noqa: F811
    # a CPU run is no longer "host-only": the share of the window inside the ops' math
    # (aten::mm and the linear layer's addmm here) is judged like device busy time
    report = kinetoscope.explain(torch_traces["warm"])
    assert report.metrics["compute_share"] > 0
    if report.verdict.regime == "not-judged":
        # a loaded machine can leave a stretch of the short recording with nothing
        # recorded at all (the thread off the CPU): then the capture is rightly not judged,
        # and says why
        assert "dead-window" in {i["id"] for i in report.quality["issues"]}
        return
    assert report.verdict.regime in ("overhead-bound", "mixed", "compute-bound")
    finding = next(f for f in report.findings if f.id == report.verdict.regime)
    assert any(e.name == "aten::mm" for e in finding.evidence)
    assert "CUDA" not in finding.suggestion


def test_regime_evidence_points_at_a_step_in_perfetto():
    # tiny transformer block: step #1 has the lowest device share (130 us of 1.240 ms host busy)
    path = corpus("gpu/tiny_transformer_block_h100.pt.trace.json.gz")
    report = kinetoscope.explain(path, rules=["overhead-bound"])
    anchor = [e for e in report.findings[0].evidence if e.step is not None]
    assert [(e.name, e.step) for e in anchor] == [("ProfilerStep#1", 1)]
    assert anchor[0].ts_us == pytest.approx(report.steps[0].start_us)
    assert anchor[0].dur_us == pytest.approx(1280.0)
