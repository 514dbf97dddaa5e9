"""Captures that cannot be judged, or only with a qualification (issue 31, item 4): each
check on a trace where it must fire and one where it must not."""

from __future__ import annotations

import json

import pytest

import kinetoscope
from kinetoscope.analysis.account.capture import capture_issues

from ..capture_helpers import run_cli
from ..conftest import corpus, kernel, launch, op, write_trace


def poor_ids(path) -> set[str]:
    return {i.id for i in capture_issues(kinetoscope.load(path)) if i.level == "poor"}


def test_launches_without_one_device_record_are_not_judged():
    # a CUPTI range-profiling run: 77 cudaLaunchKernel calls, the kernels ran under
    # cuda_profiler_range events and left no kernel record
    path = corpus("gpu/cupti_counters.json.gz")
    assert "device-lost" in poor_ids(path)
    report = kinetoscope.explain(path)
    assert report.verdict.regime == "not-judged" and report.quality["grade"] == "poor"
    assert "device-lost" not in poor_ids(corpus("gpu/resnet_train_ns.pt.trace.json.gz"))


def test_a_mostly_empty_window_is_not_judged():
    # 42.7 ms of a 62.6 ms capture lie outside the program's first and last events
    assert "empty-window" in poor_ids(corpus("gpu/cuda_event_sync_multi_stream.json.gz"))
    assert "empty-window" not in poor_ids(corpus("gpu/alexnet_train.json.gz"))


def test_a_dead_stretch_over_half_the_window_is_not_judged():
    # triton_example: a 13.3 s ProfilerStep holding 1.4 ms of host events
    assert "dead-window" in poor_ids(corpus("gpu/triton_example.json.gz"))
    # gloo:all_reduce annotations say what ran in cpu_only_rank34's quiet step
    assert "dead-window" not in poor_ids(corpus("cpu/cpu_only_rank34.pt.trace.json.gz"))
    assert "dead-window" not in poor_ids(corpus("gpu/tiny_transformer_block_h100.pt.trace.json.gz"))


def _few(path, steps: bool):
    """5 ops and 5 kernels in 579 us (11 events with the step): what ran, not a loop."""
    events = [op("ProfilerStep#1", 0.0, 579.0, cat="user_annotation")] if steps else []
    for k in range(5):
        t = k * 110.0
        events += [
            op("aten::add", t, 100.0),
            launch(t + 10, 5.0, correlation=k + 1),
            kernel("elementwise_add", t + 20, 50.0, correlation=k + 1),
        ]
    return write_trace(path, events)


def test_too_few_events_without_a_step_are_not_judged(tmp_path):
    report = kinetoscope.explain(_few(tmp_path / "few.json", steps=False))
    assert report.verdict.regime == "not-judged"
    assert "fewer than 20" in report.verdict.summary
    # the same events in a recorded step are one iteration of a loop: judged
    report = kinetoscope.explain(_few(tmp_path / "step.json", steps=True))
    assert report.verdict.regime != "not-judged"


def _with_load(path, waited: float, wall: float = 1.0):
    data = json.loads(_few(path, steps=True).read_text())
    data["kinetoscope"] = {"machine_load": {"run_queue_s": waited, "wall_s": wall, "cpus": 2}}
    path.write_text(json.dumps(data))
    return path


def test_a_contended_cpu_qualifies_the_verdict(tmp_path):
    report = kinetoscope.explain(_with_load(tmp_path / "busy.json", waited=0.6))
    assert report.quality["grade"] == "poor"
    assert report.verdict.regime != "not-judged"  # the split still reads...
    assert "qualified: the process's threads waited for a CPU 60.0%" in report.verdict.summary
    # ... a little waiting is a caution, none is nothing
    quiet = kinetoscope.explain(_with_load(tmp_path / "some.json", waited=0.2))
    assert {i["id"] for i in quiet.quality["issues"]} >= {"cpu-busy"}
    assert "qualified" not in quiet.verdict.summary
    idle = kinetoscope.explain(_with_load(tmp_path / "idle.json", waited=0.01))
    assert not {"cpu-busy", "cpu-contended"} & {i["id"] for i in idle.quality["issues"]}


def _loop(path, fetches: int, updates: int):
    """3 steps; each holds `fetches` DataLoader batches and `updates` optimizer steps."""
    events = []
    for n in range(3):
        t0 = n * 1000.0
        events.append(op(f"ProfilerStep#{n}", t0, 1000.0, cat="user_annotation"))
        for k in range(fetches):
            events.append(
                op(
                    "enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__",
                    t0 + 10 + k * 100,
                    20.0,
                )
            )
        for k in range(updates):
            events.append(
                op("Optimizer.step#SGD.step", t0 + 500 + k * 100, 50.0, cat="user_annotation")
            )
        events.append(op("aten::mm", t0 + 40, 400.0))
    return write_trace(path, events)


def test_a_step_wrapping_several_iterations_qualifies_the_verdict(tmp_path):
    assert "step-wraps-iterations" in poor_ids(_loop(tmp_path / "five.json", 5, 5))
    # gradient accumulation fetches 4 batches for one update: one iteration per step
    assert "step-wraps-iterations" not in poor_ids(_loop(tmp_path / "accum.json", 4, 1))


def test_an_empty_capture_is_not_judged(tmp_path):
    torch = pytest.importorskip("torch")
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU]) as prof:
        pass
    path = tmp_path / "empty.json"
    prof.export_chrome_trace(str(path))
    result = run_cli("explain", "--format", "json", str(path))
    if result.returncode == 2:  # a trace with no events at all is refused at the edge
        assert "Traceback" not in result.stderr and len(result.stderr.splitlines()) == 1
        return
    assert result.returncode == 0, result.stderr
    data = json.loads(result.stdout)
    assert data["verdict"]["regime"] == "not-judged"
    assert data["quality"]["grade"] == "poor"
