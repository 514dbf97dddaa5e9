"""GPU-lane rules and kernel-name on real corpus traces, plus small traces built in code."""

from __future__ import annotations

import pytest

from kinetoscope.rules.engine import run_rules
from kinetoscope.trace import load

from ..conftest import corpus, kernel, launch, op, write_trace

B200 = "gpu/tracelens_b200__eager_trace.json.gz"
XDIT = "gpu/tracelens_xdit_flux.1_aiter_sage__profile_trace_rank_0.json.gz"
TINY = "gpu/tiny_transformer_block_h100.pt.trace.json.gz"
CPU = "cpu/cpu_only_rank34.pt.trace.json.gz"


@pytest.fixture(scope="module")
def xdit():
    return load(corpus(XDIT))


def _run(path, rule_id, config=None):
    trace = path if not isinstance(path, str) and hasattr(path, "kernels") else load(path)
    out = run_rules(trace, config=config, only=[rule_id])
    return [f for f in out.findings if f.id == rule_id], out.not_checked


def test_profiler_buffer_request_fires_on_b200():
    found, _ = _run(corpus(B200), "profiler-buffer-request")
    assert len(found) == 1
    f = found[0]
    assert f.measured["count"] == 1 and f.measured["total_us"] == pytest.approx(1526.826)
    ev = f.evidence[0]
    assert ev.name == "Activity Buffer Request" and ev.dur_us == pytest.approx(1526.826)
    assert ev.ts_us == pytest.approx(1054.6, abs=0.1)  # relative to the trace start
    assert "initial offset" in f.explanation  # it precedes the first kernel


def test_profiler_buffer_request_silent_without_one():
    found, skipped = _run(corpus(TINY), "profiler-buffer-request")
    assert found == [] and skipped == []


def test_launch_latency_device_bound_queue_on_xdit(xdit):
    found, _ = _run(xdit, "launch-latency")
    (f,) = found
    # 1606 launch calls (4 of them graph replays of ~1500 kernels each); a median of 3 kernels
    # is still queued when the next launch comes: the device, not the host, sets the pace
    assert f.severity == "info" and f.impact_us == 0
    assert f.measured["p50_us"] == pytest.approx(75.1, abs=0.1)
    assert f.measured["queue_depth_p50"] == 3


def test_launch_latency_silent_when_kernels_start_promptly():
    # H100 block: p50 8 us from launch to start, well under the 50 us threshold
    found, _ = _run(corpus(TINY), "launch-latency")
    assert found == []


def test_launch_latency_not_checked_on_host_only_trace():
    found, skipped = _run(corpus(CPU), "launch-latency")
    assert found == [] and skipped[0].id == "launch-latency"
    assert "no device activity" in skipped[0].reason


def _gap_trace(tmp_path, gaps_per_step):
    """Steps of 4 kernels each; `gaps_per_step[s]` idles the device before the 3rd kernel."""
    events, corr, t = [], 1, 0.0
    for step, extra in enumerate(gaps_per_step, start=1):
        start = t
        ts = t + 5
        for k in range(4):
            events.append(launch(ts, 3, corr))
            kts = ts + 5 + (extra if k == 2 else 0)
            events.append(kernel(f"kern_{k}", kts, 10, corr))
            ts = kts + 12
            corr += 1
        events.append(op(f"ProfilerStep#{step}", start, ts - start + 5, cat="user_annotation"))
        t = ts + 20
    return load(write_trace(tmp_path / "gaps.json", events))


def test_kernel_gap_recurring_stall(tmp_path):
    trace = _gap_trace(tmp_path, [300, 300, 300])
    out = run_rules(trace, only=["kernel-gap"])
    (f,) = out.findings
    assert f.severity == "warn" and f.measured["gaps"] == 3
    assert f.measured["longest_us"] == pytest.approx(307.0)  # 300 us extra + the usual 7
    assert f.impact_us == pytest.approx(307.0)  # one stall per step
    assert "recurs 3x" in f.evidence[0].text and f.evidence[0].step in (1, 2, 3)
    # the threshold is overridable: 400 us minimum silences it
    assert (
        run_rules(trace, config={"kernel-gap": {"min_gap_us": 400}}, only=["kernel-gap"]).findings
        == []
    )


def test_kernel_gap_once_is_info(tmp_path):
    trace = _gap_trace(tmp_path, [0, 300, 0])
    (f,) = run_rules(trace, only=["kernel-gap"]).findings
    assert f.severity == "info" and f.measured["gaps"] == 1 and "once" in f.evidence[0].text
    assert f.impact_us == 0  # not a per-step cost


def test_kernel_gap_silent_on_tiny_block():
    # largest gap 139 us vs step medians of 27-41 us: under 5x
    assert _run(corpus(TINY), "kernel-gap")[0] == []


def test_kernel_variance_not_checked_on_xdit_single_step(xdit):
    # one ProfilerStep: the same work cannot be compared across steps (the old rule compared
    # kernels of one name within the step and fired on 1.4x)
    found, skipped = _run(xdit, "kernel-variance")
    assert found == [] and "at least 3 profiled steps" in skipped[0].reason


def test_kernel_variance_silent_on_steady_kernels(tmp_path):
    events = []
    for i in range(6):
        events += [launch(i * 100, 2, i + 1), kernel("steady", i * 100 + 5, 50 + (i % 2), i + 1)]
    assert (
        run_rules(load(write_trace(tmp_path / "s.json", events)), only=["kernel-variance"]).findings
        == []
    )


def test_kernel_name_decodes_top_kernels(xdit):
    found, _ = _run(xdit, "kernel-name")
    (f,) = found
    assert f.severity == "info" and len(f.evidence) == 5
    assert "hipBLASLt" in f.title and "gfx942" in f.evidence[0].text
    assert f.measured["library_share"]["Triton"] > 0.1


def test_kernel_name_not_checked_without_kernels():
    found, skipped = _run(corpus(CPU), "kernel-name")
    assert found == [] and skipped[0].reason == "no device activity recorded"


def test_dispatch_chain_on_corpus():
    found, _ = _run(corpus("gpu/amd_mi250_minitoy_train.json.gz"), "dispatch-chain")
    (f,) = found
    first = f.evidence[0].text
    assert first.startswith(
        "ProfilerStep#1 > aten::linear > aten::addmm > hipExtModuleLaunchKernel > Cijk_"
    )
    assert f.evidence[0].step == 1


def test_dispatch_chain_not_checked_on_host_only():
    found, skipped = _run(corpus(CPU), "dispatch-chain")
    assert found == [] and skipped and skipped[0].reason == "no device activity recorded"


def test_launch_latency_idle_device_is_a_warning(tmp_path):
    # every kernel starts 200 us after its launch although nothing else is queued
    events = []
    for i in range(10):
        events += [launch(i * 300, 5, i + 1), kernel("k", i * 300 + 200, 5, i + 1)]
    events.append(op("ProfilerStep#1", 0, 3000, cat="user_annotation"))
    trace = load(write_trace(tmp_path / "lat.json", events))
    (f,) = run_rules(trace, only=["launch-latency"]).findings
    assert f.severity == "warn" and f.measured["p50_us"] == pytest.approx(200.0)
    assert f.measured["queue_depth_p50"] == 0 and f.measured["threshold_p50_us"] == 50.0
    assert f.impact_us == pytest.approx(10 * 150.0)  # the wait beyond the threshold, per step
    assert f.evidence[2].ts_us == pytest.approx(200.0) and f.evidence[2].step == 1
    quiet = run_rules(trace, config={"launch-latency": {"p50_us": 250}}, only=["launch-latency"])
    assert quiet.findings == []


def test_kernel_gap_closed_by_work_on_another_stream(tmp_path):
    # stream 7 idles 300 us inside each step, but a long kernel on stream 8 (a collective
    # launched in the step before) keeps the device busy: no idle gap
    events, corr = [], 100
    for step, start in ((1, 0.0), (2, 1000.0)):
        events.append(op(f"ProfilerStep#{step}", start, 900, cat="user_annotation"))
        for k, kts in enumerate((start + 20, start + 40, start + 360, start + 380)):
            events += [launch(kts - 10, 3, corr), kernel(f"k{k}", kts, 10, corr)]
            corr += 1
        events += [
            launch(start + 800, 3, corr),
            kernel("collective", start + 30 + 1000, 400, corr, stream=8),
        ]
        corr += 1
    trace = load(write_trace(tmp_path / "streams.json", events))
    gaps = [g for g in run_rules(trace, only=["kernel-gap"]).findings]
    # step 1's gap (50-360 us) is real: nothing else runs; step 2's is covered by stream 8
    (f,) = gaps
    assert f.measured["gaps"] == 1 and f.evidence[0].step == 1


def test_kernel_gap_recurring_on_corpus():
    # H100 training step: the device idles ~320 us between a sum reduction and the optimizer's
    # next foreach kernel, 9 times in the step, always between the same two kernels
    found, _ = _run(corpus("gpu/ncompass_train_with_stack_h100nvl.pt.trace.json.gz"), "kernel-gap")
    (f,) = found
    assert f.severity == "warn" and f.measured["recurring"] >= 9
    assert "recurs 9x" in f.evidence[0].text and f.evidence[0].step == 2
    assert f.evidence[0].dur_us == pytest.approx(325.5, abs=0.1)


def test_kernel_variance_silent_on_corpus():
    # BERT inference: no kernel of >= 10 us median varies by more than 1.3x / 10% CV
    trace = corpus("gpu/tracelens_h100__gaunernst_bert-small-uncased__1016001.json.gz")
    assert _run(trace, "kernel-variance")[0] == []


def test_kernel_variance_shows_the_runs(tmp_path):
    # one kernel per step, ~580 us normally, one slow step: the series' case in small
    events, durs = [], [580, 578, 1100, 582, 579]
    for s, dur in enumerate(durs, start=1):
        start = (s - 1) * 2000
        events += [
            op(f"ProfilerStep#{s}", start, 1900, cat="user_annotation"),
            launch(start + 10, 5, s),
            kernel("gemm", start + 20, dur, s),
        ]
    (f,) = run_rules(
        load(write_trace(tmp_path / "v.json", events)), only=["kernel-variance"]
    ).findings
    assert f.measured["worst_max_over_median"] == pytest.approx(1100 / 580, abs=1e-3)
    assert f.evidence[0].text.endswith(
        "Runs (us): #1 580.0, #2 578.0, #3 1100.0, #4 582.0, #5 579.0"
    )
    assert f.evidence[0].step == 3


def test_kernel_rules_not_checked_with_copies_only(tmp_path):
    copy = kernel("Memcpy HtoD (Pageable -> Device)", 20, 5, 1)
    copy["cat"] = "gpu_memcpy"
    trace = load(
        write_trace(tmp_path / "copy.json", [launch(10, 3, 1, name="cudaMemcpyAsync"), copy])
    )
    assert trace.has_device and not len(trace.kernels)
    out = run_rules(trace, only=["kernel-name", "dispatch-chain", "fusion-opportunity"])
    assert out.findings == []
    assert {s.reason for s in out.not_checked} == {"no kernels in the trace"}
