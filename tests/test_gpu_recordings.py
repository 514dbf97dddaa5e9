"""The GPU check kit's own recordings, read again on every run without a GPU.

`tests/data/gpu_kit_h100/` holds traces the kit and `kinetoscope profile` recorded on an
NVIDIA H100 (torch 2.11.0+cu130, 2026-11-25; README there). They are the only traces
of this project's own workloads on a GPU, and the first with what a current stack
emits: cuBLAS's nvjet GEMMs, PyTorch's FlashAttention 2 and cuDNN's SM90 attention
kernels, CUDA-graph replays from compile mode reduce-overhead. Each expectation below was
read off the trace (`kinetoscope explain`, `table`, the raw events) before it was
written; the comment beside it says what was read.
"""

from __future__ import annotations

import numpy as np
import pytest

import kinetoscope
from kinetoscope.analysis.attention import attention_use
from kinetoscope.analysis.llm import llm_view
from kinetoscope.trace.categories import GRAPH_LAUNCHES

from .conftest import gpu_kit_recording

recorded = gpu_kit_recording


def fired(report) -> set[str]:
    return {f.id for f in report.findings}


@pytest.mark.parametrize("backend", ["math", "efficient", "flash", "cudnn"])
def test_each_pinned_sdpa_backend_is_named_from_its_kernels(backend):
    # flash: pytorch_flash::flash_fwd_kernel; efficient: fmha_cutlassF_bf16_aligned_64x64;
    # cudnn: cudnn_generated_fort_native_sdpa_sm90_flash_fprop_wgmma; math: bmm, softmax
    use = attention_use(kinetoscope.load(recorded(f"attention_{backend}")))
    assert use.backends()[:1] == [backend]
    assert use.uses[0].kernels > 0


@pytest.mark.parametrize(
    "name, regime",
    [
        # 64 x 64: 4.4 us of kernels per step behind 93-225 us of host work
        ("matmul_add_64_warm", "overhead-bound"),
        # bf16 4096, warm: a 171 us nvjet GEMM + 44 us add per step, host steps 107-250 us;
        # the second step starts with the device busy, so the first step's head is the
        # queue refilling after the profiler's start
        ("matmul_add_4096_bf16_warm", "compute-bound"),
        # fp32 4096: 8.1 ms of FFMA GEMM against a 683 us host: the device sets the pace
        # (the GEMM launched before the capture runs unrecorded until 2.1 ms: set apart)
        ("matmul_add_4096_fp32_warm", "compute-bound"),
        # bf16 4096, cold: the same 220 us of kernels per step, host steps 249-594 us: the
        # device idles half the steady window (622 us busy of 1.26 ms): neither bound
        ("matmul_add_4096_bf16_cold", "mixed"),
    ],
)
def test_matmul_add_verdicts_on_an_h100(name, regime):
    assert kinetoscope.explain(recorded(name)).verdict.regime == regime


def test_the_verdict_reads_the_device_share_of_the_steady_window():
    """The warm 4096 run: the first step's 160 us before its first kernel is the queue
    refilling after the profiler's start drained it (the second step starts with the
    device busy): set apart, and the device holds 96.4% of the rest. "175.5% of host" read
    as a fault; a share of the steady window never exceeds 100%."""
    warm = kinetoscope.explain(recorded("matmul_add_4096_bf16_warm")).verdict.summary
    # the judged share, and beside it the window's share the account's bar prints
    assert "600 us = 96.4% of the steady 623 us (76.7% of the window)" in warm
    assert "pipeline fill" in warm and "% of host" not in warm
    cold = kinetoscope.explain(recorded("matmul_add_4096_bf16_cold")).verdict.summary
    assert "622 us = 49.5% of the steady 1.26 ms" in cold


def test_fp32_gemm_tf32_fires_on_ffma_gemms_and_not_on_bf16_nvjet():
    # fp32: sm80_xmma_gemm_f32f32_..._ffma on compute capability 9.0, 100% of GEMM time.
    # bf16: nvjet_sm90_tst_256x128_... (cuBLASLt's Hopper GEMM): no fp32 GEMM at all.
    fp32 = kinetoscope.explain(recorded("matmul_add_4096_fp32_warm"))
    assert "fp32-gemm-tf32" in fired(fp32)
    bf16 = kinetoscope.explain(recorded("matmul_add_4096_bf16_warm"))
    assert "fp32-gemm-tf32" not in fired(bf16)


def test_a_run_that_replays_cuda_graphs_is_not_told_to_use_them():
    """The reduce-overhead trial replays a graph each step (cudaGraphLaunch) and is still
    overhead-bound (Dynamo's guards and the graph's input copies): advice to "try
    mode='reduce-overhead'" told it to do what it does. The eager run of the same workload
    is told (must fire)."""
    graphs_path = recorded("matmul_add_64_cuda_graphs")
    trace = kinetoscope.load(graphs_path)
    replays = trace.name_ids_matching(lambda n: n in GRAPH_LAUNCHES)
    assert np.isin(trace.name_id, replays).sum() == 3  # one replay per recorded step
    graphs = kinetoscope.explain(graphs_path)
    assert graphs.verdict.regime == "overhead-bound"
    advice = " ".join(f.suggestion or "" for f in graphs.findings)
    assert "reduce-overhead" not in advice and "CUDA graph" not in advice
    eager = kinetoscope.explain(recorded("matmul_add_64_warm"))
    overhead = next(f for f in eager.findings if f.id == "overhead-bound")
    assert "CUDA graph" in overhead.suggestion


@pytest.mark.parametrize("name", ["generate_eager", "generate_compiled"])
def test_generate_is_one_prefill_then_seven_decodes_per_call(name):
    # 3 recorded steps, each one generate() of 8 new tokens on a 32-token prompt; eager:
    # the embedding's input shapes give the tokens; compiled: the compiled frame's calls
    view = llm_view(kinetoscope.load(recorded(name)))
    assert view is not None
    assert [p.phase for p in view.passes] == (["prefill"] + ["decode"] * 7) * 3
    assert all(p.kernels > 0 for p in view.passes)
    if name == "generate_eager":
        assert view.source == "shapes"
        assert [p.tokens for p in view.passes] == ([32] + [1] * 7) * 3


def test_decode_of_a_tiny_model_is_launch_bound():
    # 2 layers, 128 wide: decode device busy 4.7 ms of 209 ms of decode passes
    assert "llm-decode-overhead" in fired(kinetoscope.explain(recorded("generate_eager")))


def test_pinned_and_pageable_copies_are_told_apart():
    # the tune pin_memory trial and its baseline: the same dataloader, num_workers 0
    pinned = kinetoscope.load(recorded("dataloader_pinned")).names
    pageable = kinetoscope.load(recorded("dataloader_pageable")).names
    assert "Memcpy HtoD (Pinned -> Device)" in pinned
    assert "Memcpy HtoD (Pageable -> Device)" in pageable
    for name in ("dataloader_pinned", "dataloader_pageable", "dataloader_workers0"):
        # __next__ holds 77-82% of every step in all three: 8 blur passes per image
        assert kinetoscope.explain(recorded(name)).verdict.regime == "data-bound"


def test_a_slow_first_step_after_warmup_names_the_profiler_as_a_cause():
    """matmul_add 64 after 7 iterations: the first recorded step is 294 us, every op in it
    2-3x its later time (aten::mm 124 vs 45 us), then 129 and 138 us. torch.profiler
    starts recording at that step; the advice names it beside a cold code path."""
    report = kinetoscope.explain(recorded("matmul_add_64_warm"))
    cold = next(f for f in report.findings if f.id == "cold-start")
    assert "7 iterations ran before this window" in cold.suggestion
    assert "torch.profiler starts recording" in cold.suggestion


def test_a_step_lasts_as_long_as_the_device_work_it_queued():
    """bf16 4096, warm: host windows 250, 134 and 107 us, device busy 219, 214 and 214 us
    per step (the host queued ahead; cudaDeviceSynchronize at the end waited 236 us). The
    step time is the longer of the two per step: 250, 214, 214, median 214 us, not the
    host's 134. fp32: 2.7 ms of FFMA GEMM per step behind a 206 us host window. The
    host-bound 64 run keeps its host windows (129-294 us, median 138 us)."""
    from kinetoscope.analysis.stats import trace_metrics

    bf16 = trace_metrics(kinetoscope.load(recorded("matmul_add_4096_bf16_warm")))
    assert bf16["step_time_us"] == pytest.approx(214, abs=1)
    fp32 = trace_metrics(kinetoscope.load(recorded("matmul_add_4096_fp32_warm")))
    assert 2600 < fp32["step_time_us"] < 2800
    small = trace_metrics(kinetoscope.load(recorded("matmul_add_64_warm")))
    assert small["step_time_us"] == pytest.approx(138.5, abs=0.5)


def test_explain_and_diff_say_when_the_device_sets_the_step():
    from kinetoscope.compare.diff import diff_runs
    from kinetoscope.compare.runs import load_run
    from kinetoscope.report.phrases import steps_line

    def diff_traces(a, b):
        return diff_runs(load_run(a), load_run(b))

    paced = steps_line(kinetoscope.explain(recorded("matmul_add_4096_bf16_warm")))
    assert paced.startswith("median step 214 us") and "the device's busy time" in paced
    host = steps_line(kinetoscope.explain(recorded("matmul_add_64_warm")))
    assert "the device's busy time" not in host
    d = diff_traces(recorded("matmul_add_4096_bf16_warm"), recorded("matmul_add_4096_fp32_warm"))
    assert "In A and B the device's busy time outlasts the host's window" in d.conclusion
    step = d.decomposition[0]
    assert step.key == "step_time_us" and 2300 < step.delta_us < 2600
    # the steps side by side carry the same step times (250, 214, 214 us in A)
    rows = [round(p["a"]["step_time_us"]) for p in d.to_dict()["steps"]]
    assert rows == [250, 214, 214]
    d = diff_traces(recorded("matmul_add_64_warm"), recorded("matmul_add_64_cuda_graphs"))
    assert "the device's busy time outlasts" not in d.conclusion
