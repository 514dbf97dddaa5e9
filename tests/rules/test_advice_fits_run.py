"""Advice that fits the run: backward advice only where autograd ran backward, CPU attention
described as CPU attention, a KV cache attributed by evidence, a blocking copy named as a copy.

Expectations come from the traces' event names (read with the corpus README and the
recording script in tests/advice_traces.py), not from the tool's output.
"""

from __future__ import annotations

import pytest

import kinetoscope
from kinetoscope.analysis.backward import training_evidence
from kinetoscope.analysis.syncs import sync_sites
from kinetoscope.rules.engine import run_rules

from ..advice_traces import advice_traces  # noqa: F401  (the session fixture)
from ..conftest import corpus, kernel, launch, op, write_trace

#: Corpus traces whose host threads ran autograd's backward (evaluate_function or
#: `*Backward0` ranges, Optimizer.step# ranges)
TRAINING = (
    "gpu/resnet50_dataloader_workers0.pt.trace.json.gz",  # SGD, CudnnBatchNormBackward
    "gpu/tracelens_mi300__resnet_act_checkpoint.json.gz",  # 11 evaluate_function names, SGD
    "gpu/amd_mi250_minitoy_train.json.gz",  # MseLossBackward0, SGD
)
#: ... and traces with no backward event at all: forward passes only (alexnet_train is
#: PARAM's "alex_net ... warmup|forward" benchmark, despite its file name)
FORWARD_ONLY = (
    "gpu/alexnet_train.json.gz",
    "gpu/tracelens_h100__Qwen_Qwen1.5-0.5B-Chat__1016005.json.gz",
    "gpu/tracelens_h100__gaunernst_bert-small-uncased__1016001.json.gz",
    "gpu/switch_transformer_moe_a100.json.gz",
    "gpu/tiny_transformer_block_h100.pt.trace.json.gz",
)


def _one(trace, rule_id):
    found = [f for f in run_rules(trace, only=[rule_id]).findings if f.id == rule_id]
    assert len(found) == 1, [f.id for f in found]
    return found[0]


# ---- 1. backward advice only with a backward ---------------------------------------


@pytest.mark.parametrize("relative", TRAINING)
def test_training_corpus_traces_ran_backward(relative):
    assert training_evidence(kinetoscope.load(corpus(relative))).backward


@pytest.mark.parametrize("relative", FORWARD_ONLY)
def test_forward_only_corpus_traces_did_not(relative):
    found = training_evidence(kinetoscope.load(corpus(relative)))
    assert not found.training and found.backward_events == found.optimizer_events == 0


def test_memory_peak_advises_checkpointing_in_training():
    """resnet50 trains with SGD under profile_memory: activations are kept for backward."""
    f = _one(kinetoscope.load(corpus(TRAINING[0])), "memory-peak")
    assert "activation checkpointing" in f.suggestion and "kept for backward" in f.explanation
    assert f.measured["training"] is True


@pytest.mark.parametrize("relative", FORWARD_ONLY[1:4])
def test_memory_peak_gives_no_backward_advice_to_a_forward(relative):
    """Qwen, bert-small and the Switch MoE run forwards with [memory] events: the peak
    still fires, with inference advice and no checkpointing or gradient accumulation."""
    f = _one(kinetoscope.load(corpus(relative)), "memory-peak")
    text = f.explanation + f.suggestion
    assert "checkpoint" not in text and "gradient accumulation" not in text
    assert "kept for backward" not in text and "forward-only" in f.explanation
    assert "inference_mode" in f.suggestion and f.measured["training"] is False


def test_memory_peak_on_recorded_cpu_inference_and_training(advice_traces):  # noqa: F811
    infer = _one(kinetoscope.load(advice_traces["infer"]), "memory-peak")
    assert "checkpoint" not in infer.suggestion and "forward-only" in infer.explanation
    train = _one(kinetoscope.load(advice_traces["train"]), "memory-peak")
    assert "activation checkpointing" in train.suggestion


def _collective_step(tmp_path, backward: bool):
    """One 1 ms step: an all-reduce kernel alone on its stream for 400 us (nothing
    overlaps it), launched under an op; with `backward`, under autograd's backward node."""
    parent = "autograd::engine::evaluate_function: MmBackward0" if backward else "aten::linear"
    events = [
        op("ProfilerStep#1", 0, 1000, cat="user_annotation"),
        op(parent, 10, 100),
        op("c10d::allreduce_", 20, 50),
        launch(30, 10, correlation=1),
        kernel("ncclDevKernel_AllReduce_Sum_bf16_RING_LL", 50, 400, correlation=1, stream=20),
    ]
    return kinetoscope.load(write_trace(tmp_path / f"c{int(backward)}.json", events))


def test_gradient_bucket_advice_only_where_backward_ran(tmp_path):
    trained = _one(_collective_step(tmp_path, backward=True), "exposed-communication")
    assert "bucket_cap_mb" in trained.suggestion
    forward = _one(_collective_step(tmp_path, backward=False), "exposed-communication")
    assert "bucket_cap_mb" not in forward.suggestion and "forward-only" in forward.suggestion
    # a real data-parallel run keeps the gradient advice
    ddp = _one(kinetoscope.load(corpus(TRAINING[1])), "exposed-communication")
    assert "DDP gradient buckets" in ddp.suggestion


# ---- 2. CPU attention backends ---------------------------------------------------------

GPU_DTYPE_ADVICE = ("FlashAttention-2 on CUDA", "fused path for fp16/bf16", "Use fp16/bf16")


def test_cpu_flash_is_described_as_cpu(advice_traces):  # noqa: F811
    f = _one(kinetoscope.load(advice_traces["sdpa"]), "attention-backend")
    text = f.title + f.explanation + f.suggestion
    assert f.measured["backends"] == ["flash"] and f.measured["cpu_backends"] == ["flash"]
    assert "CPU flash-attention kernel" in f.title
    assert "_scaled_dot_product_flash_attention_for_cpu" in f.explanation
    assert not any(s in text for s in GPU_DTYPE_ADVICE)
    assert "AMX" in f.suggestion and "set_num_threads" in f.suggestion


def test_cpu_math_fallback_gets_cpu_reasons_and_fix(advice_traces):  # noqa: F811
    """dropout_p=0.5: the CPU flash kernel has no dropout, SDPA runs math; fp32 is no
    reason on the CPU, so no fp16/bf16-for-flash advice."""
    f = _one(kinetoscope.load(advice_traces["sdpa_dropout"]), "attention-backend")
    assert f.measured["cpu_backends"] == ["math"]
    assert f.measured["math_reasons"] == ["dropout_p > 0: the CPU flash kernel has no dropout"]
    assert "dropout_p=0.0" in f.suggestion
    assert not any(s in f.explanation + f.suggestion for s in GPU_DTYPE_ADVICE)


def test_cuda_flash_keeps_its_gpu_description():
    """Qwen on the H100 calls _scaled_dot_product_flash_attention (pytorch_flash kernels)."""
    trace = kinetoscope.load(corpus(FORWARD_ONLY[1]))
    f = _one(trace, "attention-backend")
    assert f.measured["cpu_backends"] == []
    assert "FlashAttention-2 on CUDA" in f.explanation
    assert "CPU" not in f.title + f.explanation + f.suggestion


# ---- 3. the KV cache by evidence -------------------------------------------------------


def test_hand_written_cat_cache_is_not_transformers(advice_traces):  # noqa: F811
    """The decoder's own torch.cat cache, recorded with stacks: no transformers frame."""
    f = _one(kinetoscope.load(advice_traces["cat_cache"]), "llm-kv-cache-concat")
    assert "DynamicCache" not in f.explanation and "cache_implementation" not in f.suggestion
    assert "a concatenating KV cache" in f.explanation
    assert "Preallocate" in f.suggestion and f.measured["transformers_frames"] is False


def test_transformers_generate_is_dynamic_cache(advice_traces):  # noqa: F811
    if not advice_traces["gpt2_stack"].exists():
        pytest.skip("needs transformers")
    f = _one(kinetoscope.load(advice_traces["gpt2_stack"]), "llm-kv-cache-concat")
    assert "transformers' DynamicCache" in f.explanation
    assert "cache_implementation" in f.suggestion and f.measured["transformers_frames"] is True


# ---- 4. a blocking copy named as a copy ------------------------------------------------


def _copy(name, ts, dur, correlation):
    event = kernel(name, ts, dur, correlation)
    event["cat"] = "gpu_memcpy"
    return event


def _sampler_step(tmp_path, pinned: bool):
    """vLLM's sampler shape: a 33 ms kernel queued, then `.tolist()` (aten::to -> _to_copy
    -> copy_) copies the tokens to the host and synchronizes. Pageable: the
    cudaMemcpyAsync returns only after the kernel and the copy (33 ms), the
    cudaStreamSynchronize after it finds the stream drained (31 us). Pinned: the copy
    returns at once (8 us) and the synchronize waits the 33 ms."""
    copy_dur, sync_ts, sync_dur = (8, 120, 33_000) if pinned else (33_000, 33_120, 31)
    events = [
        op("ProfilerStep#1", 0, 34_000, cat="user_annotation"),
        op("aten::softmax", 5, 20),
        launch(10, 5, correlation=1),
        kernel("sampler_kernel", 20, 33_070, correlation=1),
        op("aten::to", 100, 33_100),
        op("aten::_to_copy", 101, 33_098),
        op("aten::copy_", 102, 33_096),
        launch(110, copy_dur, correlation=2, name="cudaMemcpyAsync"),
        _copy(f"Memcpy DtoH (Device -> {'Pinned' if pinned else 'Pageable'})", 33_095, 5, 2),
        launch(sync_ts, sync_dur, correlation=3, name="cudaStreamSynchronize"),
    ]
    return kinetoscope.load(write_trace(tmp_path / f"s{int(pinned)}.json", events))


def test_wait_held_by_pageable_copy_is_named_as_the_copy(tmp_path):
    trace = _sampler_step(tmp_path, pinned=False)
    (site,) = sync_sites(trace)
    assert site.call == "cudaMemcpyAsync" and site.pageable_copy
    assert site.held_by == "cudaMemcpyAsync (device-to-pageable copy)"
    f = _one(trace, "host-sync")
    assert "-> cudaMemcpyAsync (device-to-pageable copy)" in f.evidence[0].text
    assert "device-to-pageable copy: blocks until the copy" in f.suggestion
    assert "pin_memory" in f.suggestion


def test_wait_held_by_the_synchronize_stays_named_so(tmp_path):
    trace = _sampler_step(tmp_path, pinned=True)
    (site,) = sync_sites(trace)
    assert site.call == "cudaStreamSynchronize" and not site.pageable_copy
    f = _one(trace, "host-sync")
    assert "-> cudaStreamSynchronize" in f.evidence[0].text
    assert "device-to-pageable" not in f.suggestion


def test_corpus_waits_named_by_their_holder():
    """cuda_event_sync: `if tensor:` copies 29 us into pageable memory, then syncs 6 us:
    the copy holds. simple_add_a100's .to() waits are cudaStreamSynchronize calls alone
    (its copies are host-to-device): none is a pageable copy."""
    trace = kinetoscope.load(corpus("gpu/cuda_event_sync.json.gz"))
    held = {trace.name(s.index): s.held_by for s in sync_sites(trace)}
    assert held["aten::is_nonzero"] == "cudaMemcpyAsync (device-to-pageable copy)"
    assert held["cudaEventSynchronize"] == "cudaEventSynchronize"
    simple = kinetoscope.load(corpus("gpu/simple_add_a100.json.gz"))
    sites = sync_sites(simple)
    assert sites and not any(s.pageable_copy for s in sites)
    assert {s.call for s in sites} <= {"cudaStreamSynchronize", "cudaDeviceSynchronize"}
