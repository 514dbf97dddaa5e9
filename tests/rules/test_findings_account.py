"""Issue 19, items 3-5: the findings' account of a step holds together.

- Idle is a union: the device idles only when none of its streams is busy, so
  busy + idle is the window and per-stream gaps are never added up.
- One cause, one finding: the data wait, and a cold first step with the outlier it
  makes, are one finding each; the savings of a report fit in its step.
- Claims the trace supports: cold-start weighs the first step's wall time (host or
  device), a cold recording is called cold, call-count and dataloader-bound advise
  nothing the run already does.
"""

from __future__ import annotations

import statistics
from pathlib import Path

import numpy as np
import pytest

import kinetoscope
from kinetoscope.analysis.idle import device_idle, idle_breakdown
from kinetoscope.analysis.intervals import merge
from kinetoscope.analysis.steps import step_stats, windows
from kinetoscope.rules.base import Evidence, Finding
from kinetoscope.rules.engine import load_rules, run_rules
from kinetoscope.rules.merge import fit_savings, merge_causes

from ..conftest import corpus, corpus_files, kernel, launch, op, write_trace
from ..corpus_families import by_family
from ..torch_traces import torch_traces  # noqa: F401 - the fixture

SIDE_STREAMS = [
    "gpu/tracelens_mi300__resnet_act_checkpoint.json.gz",  # compute + NCCL streams
    "gpu/sampled_rank0.json.gz",  # 5 streams
    "multirank/dlrm_8ranks/worker0_step_12.1694128201545.pt.trace.json.gz",  # 4 streams
    "multirank/dlrm_8ranks/worker7_step_12.1694128201553.pt.trace.json.gz",
    "gpu/resnet_train_ns.pt.trace.json.gz",
]


@pytest.mark.parametrize("name", SIDE_STREAMS, ids=lambda n: n.split("/")[-1][:30])
def test_device_idle_and_busy_add_up_to_the_window(name):
    trace = kinetoscope.load(corpus(name))
    (dev,) = device_idle(trace)
    bounds = [(lo, hi) for _, _, lo, hi in windows(trace)]
    window = sum(hi - lo for lo, hi in bounds)
    assert dev.window.busy + dev.window.idle == pytest.approx(window, rel=1e-9)
    # busy is the union of every stream's work cut to the steps, computed here independently
    work = np.flatnonzero(trace.device_work)
    s, e = merge(trace.ts[work], trace.end[work])
    busy = sum(float((np.minimum(e, hi) - np.maximum(s, lo)).clip(0).sum()) for lo, hi in bounds)
    assert dev.window.busy == pytest.approx(busy, rel=1e-9)


def test_per_stream_gaps_overcount_idle_on_a_busy_two_stream_device():
    # MI300X, activation checkpointing: compute on stream 0, RCCL on stream 4. Some stream is
    # busy 46.2 ms of the 48.6 ms of steps (95%); the two streams' own gaps add up to 70.4 ms,
    # more than the whole window, which the old rule reported as "41% idle"
    trace = kinetoscope.load(corpus(SIDE_STREAMS[0]))
    (dev,) = device_idle(trace)
    assert dev.window.idle / (dev.window.busy + dev.window.idle) == pytest.approx(0.049, abs=1e-3)
    assert sum(st.total.idle for st in idle_breakdown(trace)) > dev.window.busy + dev.window.idle
    found = run_rules(trace, only=["gpu-idle-breakdown"]).findings
    assert found == []  # 4.9% idle, under the 20% threshold


def test_idle_share_is_the_share_of_the_window_with_no_stream_busy():
    # DLRM rank 0: 4 streams (compute, 3 NCCL); no stream busy 7.87 ms of the 14.5 ms step
    trace = kinetoscope.load(corpus(SIDE_STREAMS[2]))
    (f,) = run_rules(trace, only=["gpu-idle-breakdown"]).findings
    assert f.measured["idle_share"] == pytest.approx(7865 / 14455, abs=1e-4)
    assert f.measured["idle_share"] + f.measured["busy_share"] == pytest.approx(1.0)
    assert f.title.startswith("Device idle 54% of the steps")
    assert f.impact_us == 0  # a breakdown: the causes of the host wait carry the saving


# one trace per corpus family; every corpus trace under `pytest -m corpus`
@pytest.mark.parametrize("path", by_family(corpus_files()), ids=lambda p: p.name[:40])
def test_savings_fit_in_the_step(path):
    trace = kinetoscope.load(path)
    report = kinetoscope.explain(path)
    step = statistics.median(s.end - s.start for s in step_stats(trace))
    assert sum(f.impact_us for f in report.findings) <= step * (1 + 1e-9)


def test_the_data_wait_is_one_finding():
    # ResNet-50, num_workers=0: ~40% of each ~176 ms step in __next__. dataloader-bound
    # (the DataLoader) and data-bound (the verdict) describe that one wait
    report = kinetoscope.explain(corpus("gpu/resnet50_dataloader_workers0.pt.trace.json.gz"))
    (wait,) = [f for f in report.findings if f.id in ("dataloader-bound", "data-bound")]
    assert wait.id == "dataloader-bound" and wait.merged == ["data-bound"]
    assert any(e.text.startswith("also data-bound:") for e in wait.evidence)
    assert report.verdict.regime == "data-bound"  # the verdict itself is unchanged


def test_a_cold_first_step_and_its_outlier_are_one_finding():
    # H100 block: step #1 1.28 ms against 0.82 ms for #2-#3; the only outlier is that step
    report = kinetoscope.explain(corpus("gpu/tiny_transformer_block_h100.pt.trace.json.gz"))
    ids = [f.id for f in report.findings]
    assert "step-outlier" not in ids
    (cold,) = [f for f in report.findings if f.id == "cold-start"]
    assert cold.merged == ["step-outlier"] and cold.measured["cause"] == "first-step"


def test_a_slow_first_launch_that_is_a_cold_first_run_is_one_finding():
    # RTX 2080 Ti, one window: the first launch of a kernel takes 1.34 ms (lazy loading) and
    # is also the first of that kernel's repeated launches, far slower than the later ones
    trace = kinetoscope.load(corpus("gpu/param_linear_train_2080ti.json.gz"))
    found = run_rules(trace, only=["cold-start"]).findings
    warn = [f for f in found if f.severity == "warn"]
    (f,) = warn
    assert f.measured["cause"] == "first-run" and f.merged == []
    assert any(
        e.text.startswith("also cold-start: Cold start: slow first launches") for e in f.evidence
    )
    assert [g.measured["cause"] for g in found if g.severity == "info"] == ["allocator-growth"]


def _finding(id, cause, impact, severity="warn"):
    facts = [Evidence(f"{id} fact")]
    return Finding(id, severity, f"{id} title", "e", "s", impact, facts, cause=cause)


def test_merge_folds_one_cause_into_the_most_specific_finding():
    rules = load_rules()
    found = [
        _finding("data-bound", ("data-wait",), 900.0, "critical"),
        _finding("call-count", ("data-wait",), 800.0, "info"),
        _finding("dataloader-bound", ("data-wait",), 700.0, "warn"),
        _finding("kernel-gap", (), 50.0),
    ]
    merged = merge_causes(found, rules)
    assert [f.id for f in merged] == ["dataloader-bound", "kernel-gap"]
    keep = merged[0]
    assert keep.severity == "critical" and keep.impact_us == 900.0  # one wait: not 2400
    assert keep.merged == ["data-bound", "call-count"]
    assert {"data-bound fact", "call-count fact"} <= {e.text for e in keep.evidence}


def test_savings_are_bounded_in_reading_order():
    found = [_finding("a", (), 70.0), _finding("b", (), 50.0), _finding("c", (), 10.0)]
    fit_savings(found, {"step": 100.0, "host": 100.0, "device": 0.0})
    assert [f.impact_us for f in found] == [70.0, 30.0, 0.0]
    assert found[1].measured["impact_estimate_us"] == 50.0


def test_savings_are_bounded_by_the_part_of_the_step_they_come_from():
    # a step 40% idle: host-side fixes share the 40 us the device waits, kernel fixes the 60
    found = [
        _finding("overhead-bound", (), 70.0),
        _finding("host-sync", (), 10.0),
        _finding("fusion-opportunity", (), 90.0),
        _finding("cold-start", (), 5.0),
    ]
    fit_savings(found, {"step": 100.0, "host": 40.0, "device": 60.0})
    assert [f.impact_us for f in found] == [40.0, 0.0, 60.0, 0.0]


def test_a_cpu_trace_has_no_device_part_to_bound_savings_by(torch_traces):  # noqa: F811
    # recorded CPU loops: x @ w + b runs aten::mm then aten::add on the CPU, so
    # addmm-epilogue's saving is host time, bounded by the step alone
    trace = kinetoscope.load(torch_traces["loop"])
    (f,) = run_rules(trace, only=["addmm-epilogue"]).findings
    assert f.impact_us > 0 and "impact_estimate_us" not in f.measured


def _queued_steps(tmp_path, host_us, device_us=2180.0):
    """One kernel per step, launched 5 us into it; the device runs them back to back."""
    events, t, dev_free = [], 0.0, 0.0
    for n, dur in enumerate(host_us, start=1):
        events.append(op(f"ProfilerStep#{n}", t, dur, cat="user_annotation"))
        events.append(launch(t + 5, 3, n))
        start = max(dev_free, t + 10)
        events.append(kernel("gemm", start, device_us, n))
        dev_free = start + device_us
        t += dur
    return kinetoscope.load(write_trace(tmp_path / "queued.json", events))


def test_cold_start_ignores_host_time_hidden_behind_the_device(tmp_path):
    # the first step's host time is 341 us against 64 us, but each step's kernel runs 2.18 ms:
    # the device sets the pace and the slow host step costs no wall time
    trace = _queued_steps(tmp_path, [341, 64, 64, 64])
    assert run_rules(trace, only=["cold-start"]).findings == []


def test_cold_start_fires_when_the_first_step_costs_wall_time(tmp_path):
    # the same loop with 20 us kernels: the host sets the pace, its slow first step is real
    trace = _queued_steps(tmp_path, [341, 64, 64, 64], device_us=20.0)
    (f,) = run_rules(trace, only=["cold-start"]).findings
    assert f.measured["first_step_us"] == 341 and f.measured["median_later_us"] == 64


def _cpu_steps(tmp_path, first_number, durations, **top):
    events = []
    t = 0.0
    for k, dur in enumerate(durations):
        events.append(op(f"ProfilerStep#{first_number + k}", t, dur, cat="user_annotation"))
        events.append(op("aten::mm", t + 1, dur - 2))
        t += dur
    return kinetoscope.load(write_trace(tmp_path / "cpu.json", events, **top))


def test_a_run_recorded_cold_is_called_cold(tmp_path):
    # kinetoscope profile --warmup 0 with the default schedule (wait 1, warmup 1): the
    # program ran no warm-up of its own; only the profiler schedule's two steps came first
    meta = {"warmup_iters": 0, "schedule": {"wait": 1, "warmup": 1, "active": 3, "repeat": 1}}
    trace = _cpu_steps(tmp_path, 2, [464, 40, 40, 40], kinetoscope=meta)
    (f,) = run_rules(trace, only=["cold-start"]).findings
    assert "recorded cold" in f.title and "recorded cold" in f.suggestion
    assert "not a missing warmup" not in f.suggestion


def test_a_cold_run_tag_without_metadata_is_called_cold(tmp_path):
    # the trace exported by kinetoscope profile carries its run tag in the file name
    trace = _cpu_steps(tmp_path, 2, [464, 40, 40, 40])
    assert "recorded cold" not in run_rules(trace, only=["cold-start"]).findings[0].title
    tagged = tmp_path / "matmul_add_1024_fp32_cold_eager.json"
    tagged.write_bytes(Path(trace.path).read_bytes())
    (f,) = run_rules(kinetoscope.load(tagged), only=["cold-start"]).findings
    assert "recorded cold" in f.title


def test_a_warmed_up_run_is_told_what_is_still_cold(tmp_path):
    meta = {"warmup_iters": 3, "schedule": {"wait": 1, "warmup": 1, "active": 3, "repeat": 1}}
    trace = _cpu_steps(tmp_path, 2, [464, 40, 40, 40], kinetoscope=meta)
    (f,) = run_rules(trace, only=["cold-start"]).findings
    assert "5 iterations ran before this window" in f.suggestion
    assert "recorded cold" not in f.title


def _many_adds(tmp_path, extra=(), next_name=None):
    """3 CPU steps of 150 aten::add calls (inside a DataLoader __next__ when `next_name`)."""
    events = list(extra)
    for n in range(3):
        base = n * 10_000
        events.append(op(f"ProfilerStep#{n + 1}", base, 9_000, cat="user_annotation"))
        if next_name:
            events.append(op(f"enumerate(DataLoader)#{next_name}.__next__", base + 1, 8_000))
        for k, name in enumerate(("aten::mm", "aten::relu", "aten::sum", "aten::copy_")):
            events.append(op(name, base + 8_100 + 200 * k, 100))
        events += [op("aten::add", base + 10 + 50 * k, 40) for k in range(150)]
    return kinetoscope.load(write_trace(tmp_path / "adds.json", events))


def test_call_count_does_not_advise_compile_on_a_compiled_run(tmp_path):
    eager = run_rules(_many_adds(tmp_path), only=["call-count"]).findings
    assert "torch.compile" in eager[0].suggestion
    graph = [op("## Call CompiledFxGraph fabc123 ##", 30_000, 10)]
    (f,) = run_rules(_many_adds(tmp_path, graph), only=["call-count"]).findings
    assert "fuse it with torch.compile" not in f.suggestion
    assert "already uses torch.compile" in f.suggestion


def test_calls_inside_the_dataloader_are_the_data_wait(tmp_path):
    trace = _many_adds(tmp_path, next_name="_SingleProcessDataLoaderIter")
    found = run_rules(trace, only=["call-count", "dataloader-bound"]).findings
    (f,) = found
    assert f.id == "dataloader-bound" and f.merged == ["call-count"]
    # a CPU-only trace: no pinned memory, no GPU-side preprocessing
    assert "num_workers > 0" in f.suggestion and "pin_memory" not in f.suggestion


def test_dataloader_with_workers_is_not_told_to_add_workers(tmp_path):
    trace = _many_adds(tmp_path, next_name="_MultiProcessingDataLoaderIter")
    (f,) = run_rules(trace, only=["dataloader-bound"]).findings
    assert "already loads in worker processes" in f.suggestion
    assert "Load batches in background processes" not in f.suggestion


def test_launch_latency_names_no_full_queue_on_an_idle_device(tmp_path):
    # 10 kernels launched 10 us apart all start after 1 ms (after a final sync): many are
    # "queued", but the device works 50 us of the waits: nothing full holds them back
    events = [op("ProfilerStep#1", 0, 2_000, cat="user_annotation")]
    for i in range(10):
        events += [launch(i * 10, 5, i + 1), kernel("k", 1_000 + i * 5, 5, i + 1)]
    trace = kinetoscope.load(write_trace(tmp_path / "late.json", events))
    (f,) = run_rules(trace, only=["launch-latency"]).findings
    assert f.measured["queue_depth_p50"] >= 2 and f.measured["busy_share_while_waiting"] < 0.1
    assert "queue is full" not in f.title and f.severity == "warn"
    assert "is not what holds them back" in f.explanation


def test_a_recorded_data_wait_is_one_finding_within_the_step(tmp_path):
    # a real CPU loop: each item costs 60 tiny aten::add calls inside
    # DataLoader.__next__ (num_workers=0), the model one Linear: dataloader-bound,
    # data-bound and call-count (aten::add) all see the same wait
    torch = pytest.importorskip("torch")
    from ..torch_traces import profile_steps

    class Items(torch.utils.data.Dataset):
        def __len__(self):
            return 64

        def __getitem__(self, i):
            x = torch.zeros(8)
            for _ in range(60):
                x = x + 1
            return x

    batches = iter(torch.utils.data.DataLoader(Items(), batch_size=4, num_workers=0))
    model = torch.nn.Linear(8, 8)

    def step(_):
        model(next(batches)).sum()

    trace = profile_steps(tmp_path / "data.json", step, steps=3, warmup=1)
    report = kinetoscope.explain(trace.path)
    waits = [f for f in report.findings if {f.id, *f.merged} & {"dataloader-bound", "call-count"}]
    (wait,) = waits
    assert wait.id == "dataloader-bound" and "call-count" in wait.merged
    assert "pin_memory" not in wait.suggestion  # a CPU-only run
    step_us = statistics.median(s.end - s.start for s in step_stats(trace))
    assert sum(f.impact_us for f in report.findings) <= step_us * (1 + 1e-9)


@pytest.mark.parametrize(
    "name",
    [
        "gpu/tracelens_b200__eager_trace.json.gz",  # Torch-Compiled Region, CompiledFxGraph
        "gpu/tracelens_vllm_prefilldecode_piecewise__graph_execution.json.gz",  # triton_poi_*
        "gpu/tracelens_xdit_flux.1_aiter_sage__profile_trace_rank_0.json.gz",
    ],
    ids=lambda n: n.split("/")[-1][:30],
)
def test_no_advice_to_compile_a_compiled_run(name):
    report = kinetoscope.explain(corpus(name))
    rules = ("call-count", "metadata-only-ops", "gpu-idle-breakdown")
    advice = [f.suggestion for f in report.findings if f.id in rules]
    assert advice  # the rules speak on these traces
    for text in advice:
        assert "torch.compile" not in text or "already uses torch.compile" in text, text
