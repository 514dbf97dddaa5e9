"""Training-loop health rules on real traces (corpus and CPU runs) and tiny built ones."""

from __future__ import annotations

import pytest

import kinetoscope
from kinetoscope.analysis.dataloader import data_waits
from kinetoscope.analysis.idle import device_idle, idle_breakdown
from kinetoscope.analysis.syncs import sync_sites
from kinetoscope.rules.engine import run_rules

from ..conftest import corpus, corpus_files, kernel, launch, op, write_trace


def findings(trace, rule_id, config=None):
    outcome = run_rules(trace, config=config, only=[rule_id])
    return [f for f in outcome.findings if f.id == rule_id], outcome.not_checked


def test_dataloader_bound_fires_with_zero_workers():
    trace = kinetoscope.load(corpus("gpu/resnet50_dataloader_workers0.pt.trace.json.gz"))
    waits = data_waits(trace)
    # the numbers that make it data-bound: 6 steps, each spends 38-42% inside
    # _SingleProcessDataLoaderIter.__next__, and the V100 is idle for >80% of that wait
    assert len(waits) == 6
    assert all(0.35 < w.share < 0.45 for w in waits)
    found, _ = findings(trace, "dataloader-bound")
    assert len(found) == 1
    f = found[0]
    assert f.measured["share"] >= f.measured["min_share"] == 0.10
    assert f.measured["device_idle_share_of_wait"] > 0.8
    assert 50_000 < f.impact_us < 70_000  # ~60 ms of device idle per ~175 ms step
    assert f.evidence[0].name == "enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__"
    assert f.evidence[0].step in {5, 6, 7, 8, 9, 10}
    assert 0 <= f.evidence[0].ts_us < trace.end_time - trace.start_time


def test_dataloader_bound_silent_with_four_workers():
    trace = kinetoscope.load(corpus("gpu/resnet50_dataloader_workers4.pt.trace.json.gz"))
    waits = data_waits(trace)
    # with 4 workers the batch is ready: __next__ takes 0.1-2.4% of a step
    assert len(waits) == 6
    assert max(w.share for w in waits) < 0.03
    found, _ = findings(trace, "dataloader-bound")
    assert found == []


def test_dataloader_bound_threshold_is_overridable():
    trace = kinetoscope.load(corpus("gpu/resnet50_dataloader_workers4.pt.trace.json.gz"))
    found, _ = findings(trace, "dataloader-bound", {"dataloader-bound": {"min_share": 0.001}})
    # lowered threshold: now the small share crosses it, but the device is busy during part
    # of the wait; whatever fires must report the overridden threshold
    for f in found:
        assert f.measured["min_share"] == 0.001


def test_dataloader_not_checked_without_dataloader():
    trace = kinetoscope.load(corpus("gpu/alexnet_train.json.gz"))
    found, skipped = findings(trace, "dataloader-bound")
    assert found == [] and skipped[0].id == "dataloader-bound"
    assert "DataLoader" in skipped[0].advice


def test_host_sync_fires_on_item_inside_step():
    trace = kinetoscope.load(corpus("gpu/cuda_event_sync.json.gz"))
    sites = sync_sites(trace)
    # `if tensor:` in step 100: aten::is_nonzero -> aten::item -> _local_scalar_dense ->
    # cudaMemcpyAsync (29 us, its copy is "Memcpy DtoH (Device -> Pageable)": CUDA returns
    # only once it completed) + cudaStreamSynchronize (6 us) is one site, named by the op
    # the user wrote; the host was blocked in both calls, 35 us, and the copy held it (29 of
    # the 35 us): the site is named by the copy, not by the synchronize that found it done
    item = [s for s in sites if trace.name(s.index) == "aten::is_nonzero"]
    assert len(item) == 1 and item[0].wait_us == 35.0 and item[0].step == 100
    assert item[0].kind == "scalar read" and item[0].call == "cudaMemcpyAsync"
    assert item[0].pageable_copy
    assert [trace.name(c) for c in item[0].calls] == ["cudaMemcpyAsync", "cudaStreamSynchronize"]
    found, _ = findings(trace, "host-sync")
    assert len(found) == 1
    assert any(e.name == "aten::is_nonzero" for e in found[0].evidence)


@pytest.mark.parametrize(
    "name",
    [
        "gpu/tracelens_h100__gaunernst_bert-small-uncased__1016001.json.gz",
        "gpu/resnet50_dataloader_workers0.pt.trace.json.gz",  # pageable HtoD copy syncs
        "gpu/ncompass_train_with_stack_h100nvl.pt.trace.json.gz",  # .item() in Adam.step
        "gpu/tracelens_h100__Qwen_Qwen1.5-0.5B-Chat__1016005.json.gz",  # is_nonzero -> item
        "gpu/tracelens_mi300__Qwen_Qwen1.5-0.5B-Chat__1016005.json.gz",  # the same on ROCm
    ],
)
def test_host_sync_fires_on_corpus_traces_with_syncs_in_steps(name):
    trace = kinetoscope.load(corpus(name))
    found, _ = findings(trace, "host-sync")
    assert len(found) == 1
    assert all(e.step is not None for e in found[0].evidence)


def test_host_sync_ignores_final_flush():
    # its only sync is cudaDeviceSynchronize at 3414 us, after the last step ends at 3326 us
    trace = kinetoscope.load(corpus("gpu/tiny_transformer_block_h100.pt.trace.json.gz"))
    assert "cudaDeviceSynchronize" in trace.names
    assert sync_sites(trace) == []
    assert findings(trace, "host-sync")[0] == []
    # same for resnet50: its 16 ms cudaDeviceSynchronize after step 10 is not a site
    trace = kinetoscope.load(corpus("gpu/resnet50_dataloader_workers0.pt.trace.json.gz"))
    assert all(trace.name(s.index) != "cudaDeviceSynchronize" for s in sync_sites(trace))


def test_host_sync_final_flush_without_steps(tmp_path):
    events = [
        op("aten::add", 0, 10),
        launch(2, 3, correlation=1),
        kernel("add_kernel", 20, 5, correlation=1),
        op("aten::item", 40, 30),
        launch(45, 20, correlation=2, name="cudaStreamSynchronize"),
        op("aten::mul", 80, 10),
        launch(100, 50, correlation=3, name="cudaDeviceSynchronize"),
    ]
    trace = kinetoscope.load(write_trace(tmp_path / "t.json", events))
    sites = sync_sites(trace)
    assert [trace.name(s.index) for s in sites] == ["aten::item"]
    assert sites[0].call == "cudaStreamSynchronize"


def _steps_trace(tmp_path, durations, slow_kernel_step=None):
    events, ts, corr = [], 0, 1
    for n, dur in enumerate(durations):
        events.append(op(f"ProfilerStep#{n}", ts, dur, cat="user_annotation"))
        events.append(op("aten::mm", ts + 1, 5))
        events.append(launch(ts + 2, 2, correlation=corr))
        k_dur = dur - 20 if n == slow_kernel_step else 10
        events.append(kernel("gemm", ts + 5, k_dur, correlation=corr))
        corr += 1
        ts += dur + 1
    return kinetoscope.load(write_trace(tmp_path / "steps.json", events))


def test_step_outlier_names_the_slow_step(tmp_path):
    trace = _steps_trace(tmp_path, [400, 100, 100, 300, 100, 100], slow_kernel_step=3)
    found, _ = findings(trace, "step-outlier")
    assert len(found) == 1
    f = found[0]
    # one outlier count everywhere (analysis.stats): the first step (4x the 100 us median)
    # counts too, its evidence pointing at cold-start; #3 is 3x
    assert [e.step for e in f.evidence] == [0, 3]
    assert "cold-start" in f.evidence[0].text and f.title.startswith("2 of 6 steps")
    assert f.measured["median_step_us"] == 100
    assert f.measured["worst_ratio"] == 4.0
    assert "device busy time" in f.evidence[1].text


def test_step_outlier_silent_on_even_steps_and_not_checked_on_few(tmp_path):
    trace = _steps_trace(tmp_path, [100, 100, 110, 100])
    assert findings(trace, "step-outlier")[0] == []
    trace = kinetoscope.load(corpus("gpu/cuda_event_sync.json.gz"))
    found, skipped = findings(trace, "step-outlier")
    assert found == [] and "prof.step()" in skipped[0].advice


def test_idle_breakdown_categories(tmp_path):
    events = [
        op("aten::a", 0, 100),
        launch(1, 2, correlation=1),
        launch(3, 2, correlation=2),
        launch(60, 2, correlation=3),
        launch(65, 2, correlation=4),
        kernel("k1", 10, 10, correlation=1),  # busy 10-20
        kernel("k2", 25, 10, correlation=2),  # gap 5, launched at 3 < 20: kernel wait
        kernel("k3", 70, 10, correlation=3),  # gap 35, launched at 60 > 35: host wait
        kernel("k4", 200, 10, correlation=4),  # gap 120, launched at 65 < 80: other
    ]
    trace = kinetoscope.load(write_trace(tmp_path / "idle.json", events))
    (stream,) = idle_breakdown(trace)
    assert stream.total.kernel_wait == 5
    assert stream.total.host_wait == 35
    assert stream.total.other == 120
    assert stream.total.busy == 40
    assert stream.longest_gap == (80.0, 120.0, "other")


def test_gpu_idle_breakdown_on_dataloader_bound_trace():
    trace = kinetoscope.load(corpus("gpu/resnet50_dataloader_workers0.pt.trace.json.gz"))
    found, _ = findings(trace, "gpu-idle-breakdown")
    assert len(found) == 1
    f = found[0]
    # the V100 waits for the host (the DataLoader): host wait is 97% of idle time
    assert f.measured["host_wait_share"] > 0.9
    assert f.measured["idle_share"] >= f.measured["min_idle_share"]
    assert "host wait" in f.title


def test_profiling_window():
    trace = kinetoscope.load(corpus("gpu/cuda_event_sync.json.gz"))
    found, _ = findings(trace, "profiling-window")
    assert len(found) == 1 and found[0].measured["steps"] == 1
    trace = kinetoscope.load(corpus("gpu/resnet50_dataloader_workers0.pt.trace.json.gz"))
    assert findings(trace, "profiling-window")[0] == []  # steps 5-10, warmed up
    found, _ = findings(trace, "profiling-window", {"profiling-window": {"max_steps": 3}})
    assert "6 active steps" in found[0].title


MEMORY_TRACES = corpus_files()


@pytest.mark.parametrize("path", MEMORY_TRACES, ids=lambda p: p.name[:40])
def test_memory_peak_on_every_corpus_trace(path):
    trace = kinetoscope.load(path)
    found, skipped = findings(trace, "memory-peak")
    if len(trace.memory):
        assert found, "memory-peak must report on traces with [memory] events"
        for f in found:
            assert f.measured["peak_allocated_bytes"] > 0
            assert f.evidence[0].ts_us is not None
    else:
        assert found == []
        assert skipped[0].reason == "no [memory] events in the trace"
        assert "profile_memory=True" in skipped[0].advice


def test_memory_peak_names_the_op():
    trace = kinetoscope.load(corpus("gpu/switch_transformer_moe_a100.json.gz"))
    (f,) = findings(trace, "memory-peak")[0]
    # total_allocated peaks at 4588013568 bytes right after an allocation in aten::addmm
    assert f.measured["peak_allocated_bytes"] == 4588013568
    assert f.measured["peak_reserved_bytes"] == 4655677440
    assert "aten::addmm in aten::linear" in f.title


def test_memory_spike(tmp_path):
    def mem(ts, nbytes, total, reserved):
        return {
            "ph": "i",
            "s": "t",
            "name": "[memory]",
            "pid": 100,
            "tid": 1,
            "ts": ts,
            "args": {
                "Device Type": 1,
                "Device Id": 0,
                "Bytes": nbytes,
                "Total Allocated": total,
                "Total Reserved": reserved,
                "Addr": 1,
            },
        }

    events = []
    for n in range(3):
        base = n * 100
        events += [
            op(f"ProfilerStep#{n}", base, 90, cat="user_annotation"),
            op("aten::cat", base + 10, 10),
            mem(base + 11, 600, 1000, 2048),
            mem(base + 50, -600, 400, 2048),
            op("empty_cache", base + 60, 5, cat="user_annotation"),
            mem(base + 61, 0, 400, 1024),
            mem(base + 70, 0, 400, 2048),
        ]
    trace = kinetoscope.load(write_trace(tmp_path / "mem.json", events))
    found, _ = findings(trace, "memory-spike")
    titles = " | ".join(f.title for f in found)
    assert "60% of the cuda:0 peak" in titles
    assert "in 3 of 3 steps" in titles


def test_idle_breakdown_per_step(tmp_path):
    events = [
        op("ProfilerStep#0", 0, 100, cat="user_annotation"),
        launch(1, 2, correlation=1),
        launch(50, 2, correlation=2),
        op("ProfilerStep#1", 100, 100, cat="user_annotation"),
        launch(101, 2, correlation=3),
        kernel("k1", 10, 10, correlation=1),  # step 0
        kernel("k2", 60, 10, correlation=2),  # launched at 50 > 20: host wait 40, step 0
        kernel("k3", 110, 10, correlation=3),  # launched at 101 > 70: host wait 40, step 1
    ]
    trace = kinetoscope.load(write_trace(tmp_path / "steps.json", events))
    (stream,) = idle_breakdown(trace)
    assert stream.by_step[0].host_wait == 40 and stream.by_step[0].busy == 20
    assert stream.by_step[1].host_wait == 40 and stream.by_step[1].busy == 10
    # the device's own account cuts every gap to the step window, leading and trailing
    # gaps included, so busy + idle is the step: 20 + 80 and 10 + 90, all waiting for the host
    (dev,) = device_idle(trace)
    assert (dev.by_step[0].busy, dev.by_step[0].host_wait) == (20, 80)
    assert (dev.by_step[1].busy, dev.by_step[1].host_wait) == (10, 90)
    (f,) = findings(trace, "gpu-idle-breakdown")[0]
    assert [e.step for e in f.evidence if e.step is not None] == [1, 0]  # most idle first
    assert f.measured["idle_share"] == 0.85 and f.measured["busy_share"] == 0.15


def test_host_sync_counts_the_pageable_copy_behind_item():
    # sampled_rank0's aten::item -> _local_scalar_dense holds one runtime call, a
    # cudaMemcpyAsync whose copy is "Memcpy DtoH (Device -> Pageable)": a copy into pageable
    # memory returns only once complete, so the host waited there (17 us and 16 us in step
    # 551); the 777 us .to() copy of step 552 is the longest wait
    trace = kinetoscope.load(corpus("gpu/sampled_rank0.json.gz"))
    sites = sync_sites(trace)
    items = [s for s in sites if trace.name(s.index) == "aten::item"]
    assert [s.wait_us for s in items if s.step == 551] == [17.0, 16.0]
    assert all(s.call == "cudaMemcpyAsync" and s.kind == "scalar read" for s in items)
    longest = max(sites, key=lambda s: s.wait_us)
    assert trace.name(longest.index) == "aten::to" and longest.wait_us == 777.0
    assert longest.kind == "blocking op" and longest.step == 552
    assert findings(trace, "host-sync")[0]


def test_cpu_item_in_adam_is_not_a_sync(tmp_path):
    # Adam without capturable keeps its step counter on the CPU and reads it with .item():
    # aten::item runs, but no runtime call blocks on a device
    torch = pytest.importorskip("torch")
    from ..torch_traces import profile_steps

    model = torch.nn.Linear(16, 16)
    opt = torch.optim.Adam(model.parameters(), foreach=False)
    x = torch.randn(8, 16)

    def step(_):
        opt.zero_grad()
        model(x).sum().backward()
        opt.step()
        float(model.weight.sum().item())

    trace = profile_steps(tmp_path / "adam.json", step, steps=3, warmup=1)
    assert "aten::item" in trace.names
    assert sync_sites(trace) == []
    found, skipped = findings(trace, "host-sync")
    assert found == [] and [s.id for s in skipped] == ["host-sync"]
