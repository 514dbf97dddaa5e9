"""`attention-backend`: the backend that ran, on CPU traces recorded here and on the corpus.

Corpus expectations were written from the traces' kernel and op names before
running the tool (zcat | grep for flash/fmha/cudnn/attn/sage/paged kernels).
"""

from __future__ import annotations

import pytest

from kinetoscope.analysis.attention import attention_use, kernel_family
from kinetoscope.rules.engine import run_rules
from kinetoscope.trace import load

from .conftest import corpus


def _finding(trace):
    found = [f for f in run_rules(trace, only=["attention-backend"]).findings]
    assert len(found) <= 1
    return found[0] if found else None


def _use(trace, backend):
    return next(u for u in attention_use(trace).uses if u.backend == backend)


# ---- CPU: each backend torch 2.13 CPU has, profiled for real --------------------------------


@pytest.fixture(scope="module")
def cpu_backends(tmp_path_factory):
    """The attention workload pinned to each CPU backend (math, flash) and naive."""
    pytest.importorskip("torch")
    from kinetoscope.capture.runner import CaptureOptions, run_workload

    out = tmp_path_factory.mktemp("attn")
    traces = {}
    for backend in ("math", "flash", "naive"):
        overrides = {"backend": backend, "seq": 32, "head_dim": 16}
        result = run_workload(
            "attention", overrides, CaptureOptions(device="cpu", out=out, record_shapes=True)
        )
        traces[backend] = load(result.written[0].trace)
    return traces


@pytest.mark.parametrize("backend", ["math", "flash"])
def test_each_cpu_backend_is_named(cpu_backends, backend):
    trace = cpu_backends[backend]
    finding = _finding(trace)
    assert finding is not None
    assert finding.measured["backends"] == [backend]
    assert f"{backend} (3 calls" in finding.title  # schedule active=3, one call per step
    assert finding.severity == ("warn" if backend == "math" else "info")


def test_math_on_cpu_without_a_recorded_reason_says_it_was_likely_forced(cpu_backends):
    finding = _finding(cpu_backends["math"])
    # fp32, no mask, head dim 16, no dropout: CPU flash takes all of these
    assert finding.measured["math_reasons"] == []
    assert "sdpa_kernel(SDPBackend.MATH)" in finding.explanation


def test_naive_attention_has_no_sdpa_call_and_no_finding(cpu_backends):
    assert _finding(cpu_backends["naive"]) is None


def test_unavailable_backend_is_a_one_line_usage_error(tmp_path):
    pytest.importorskip("torch")
    from kinetoscope.capture.runner import CaptureOptions, run_workload
    from kinetoscope.errors import UsageError

    # torch 2.13 CPU has no memory-efficient kernel: sdpa_kernel(EFFICIENT) finds no backend
    with pytest.raises(UsageError, match="--backend efficient cannot run on cpu"):
        run_workload(
            "attention",
            {"backend": "efficient", "seq": 8, "head_dim": 8},
            CaptureOptions(device="cpu", out=tmp_path),
        )


def test_dropout_sends_cpu_sdpa_to_math_and_is_the_reason(tmp_path):
    # measured on torch 2.13 CPU: fp64 and a mask tensor still take
    # _scaled_dot_product_flash_attention_for_cpu; dropout_p > 0 takes the math path
    torch = pytest.importorskip("torch")
    import torch.nn.functional as F
    from torch.profiler import ProfilerActivity, profile

    from kinetoscope.analysis.attention import math_reasons

    q = torch.randn(1, 2, 16, 8, dtype=torch.float64)
    mask = torch.ones(16, 16, dtype=torch.bool).tril()
    path = tmp_path / "dropout.json"
    with profile(activities=[ProfilerActivity.CPU], record_shapes=True) as prof:
        F.scaled_dot_product_attention(q, q, q, attn_mask=mask)  # flash
        F.scaled_dot_product_attention(q, q, q, attn_mask=mask, dropout_p=0.5)  # math
    prof.export_chrome_trace(str(path))
    trace = load(path)
    assert attention_use(trace).backends() in (["math", "flash"], ["flash", "math"])
    math = _use(trace, "math")
    assert math.calls == 1 and math.dropout
    assert {s.dtype for s in math.shapes} == {"fp64"} and math.shapes[0].has_mask
    assert math_reasons(math, on_device=False) == [
        "dropout_p > 0: the CPU flash kernel has no dropout"
    ]
    finding = _finding(trace)
    assert finding.severity == "warn"
    assert "a math call takes" in finding.explanation  # compared with the flash call


# ---- the corpus --------------------------------------------------------------------------


def _corpus_trace(name):
    return load(corpus(f"gpu/{name}"))


def test_h100_qwen_runs_flash_attention_2_one_kernel_per_call():
    # 24 _scaled_dot_product_flash_attention ops, pytorch_flash::flash_fwd_kernel kernels
    trace = _corpus_trace("tracelens_h100__Qwen_Qwen1.5-0.5B-Chat__1016005.json.gz")
    flash = _use(trace, "flash")
    assert flash.source == "op" and flash.calls == 24
    assert flash.kernels_per_call == 1
    assert flash.libraries == {"FlashAttention-2 (pytorch_flash)"}
    finding = _finding(trace)
    assert finding.severity == "info" and finding.measured["backends"] == ["flash"]


def test_h100_bert_runs_flash():
    trace = _corpus_trace("tracelens_h100__gaunernst_bert-small-uncased__1016001.json.gz")
    flash = _use(trace, "flash")
    assert (flash.calls, flash.kernels_per_call) == (4, 1)


def test_mi300_qwen_flash_is_aotriton_attn_fwd():
    # the same model on ROCm: the flash op launches AOTriton's `attn_fwd`
    trace = _corpus_trace("tracelens_mi300__Qwen_Qwen1.5-0.5B-Chat__1016005.json.gz")
    flash = _use(trace, "flash")
    assert flash.calls == 24
    assert flash.kernel_names["attn_fwd"] == 24
    assert flash.libraries == {"AOTriton (ROCm)"}


def test_xdit_flux_runs_sage_attention_and_a_few_aotriton_flash_calls():
    # 228 sage_fwd kernels with no SDPA op over them; 13 SDPA calls -> attn_fwd
    trace = _corpus_trace("tracelens_xdit_flux.1_aiter_sage__profile_trace_rank_0.json.gz")
    found = attention_use(trace)
    assert found.backends()[0] == "sage"
    sage = _use(trace, "sage")
    assert (sage.source, sage.calls, sage.kernel_names["sage_fwd"]) == ("kernel", 0, 228)
    flash = _use(trace, "flash")
    assert flash.calls == 13 and flash.kernel_names["attn_fwd"] == 13


@pytest.mark.parametrize(
    ("name", "backend", "kernel"),
    [
        # SGLang on MI300X: vLLM's ROCm paged attention (ll4mi) kernels
        ("tracelens_sglang_decode__sglang_Qwen3-8B_decode.json.gz", "paged attention", None),
        # vLLM on ROCm: the Triton unified attention kernel
        (
            "tracelens_vllm_prefilldecode_piecewise__graph_execution.json.gz",
            "unified attention",
            "kernel_unified_attention_2d",
        ),
        # vLLM on B200 with FlashInfer: TensorRT-LLM generated fmhaSm100a kernels
        ("tracelens_b200__eager_trace.json.gz", "trtllm-gen fmha", None),
    ],
)
def test_serving_engines_backend_from_kernel_names(name, backend, kernel):
    trace = _corpus_trace(name)
    use = _use(trace, backend)
    assert use.source == "kernel" and use.kernels > 0
    if kernel:
        assert use.kernel_names[kernel] == use.kernels
    assert _finding(trace).severity == "info"


def test_native_mha_with_weights_is_the_unfused_math_path():
    # aten::_native_multi_head_attention with no SDPA op under it: bmm-style cutlass GEMMs and
    # softmax_warp_forward, fp32, 3 calls (one per step)
    trace = _corpus_trace("tiny_transformer_block_h100.pt.trace.json.gz")
    finding = _finding(trace)
    assert finding.severity == "warn"
    assert finding.measured["backends"] == ["math"]
    reasons = " ".join(finding.measured["math_reasons"])
    assert "need_weights=True" in reasons and "fp32" in reasons


@pytest.mark.parametrize(
    "name", ["resnet50_dataloader_workers4.pt.trace.json.gz", "alexnet_train.json.gz"]
)
def test_cudnn_convolutions_are_not_attention(name):
    # cuDNN conv / batch-norm kernels (cudnn::winograd, bn_fw, implicit_gemm...) are not SDPA
    assert _finding(_corpus_trace(name)) is None


@pytest.mark.parametrize(
    ("kernel", "backend"),
    [
        (
            "fmha_cutlassF_f16_aligned_64x64_rf_sm80(PyTorchMemEffAttention::AttentionKernel<",
            "efficient",
        ),
        ("cudnn_generated_fort_native_sdpa_sm90_flash_fprop_wgmma_f16_knob_3", "cudnn"),
        ("void cudnn::winograd_nonfused::winogradForwardData4x4<float, float>(", None),
        ("_ZN5aiter24add_rmsnorm_quant_kernelIDF16bDF16bLi64E", None),
    ],
)
def test_kernel_family_names(kernel, backend):
    family = kernel_family(kernel)
    assert (family[0] if family else None) == backend


def test_diff_says_the_backend_changed_in_one_line(cpu_backends):
    from kinetoscope.compare.diff import Run, diff_runs

    result = diff_runs(Run(cpu_backends["math"]), Run(cpu_backends["flash"]))
    assert result.conclusion.startswith("Attention backend changed: math -> flash.")
    same = diff_runs(Run(cpu_backends["flash"]), Run(cpu_backends["flash"]))
    assert "Attention backend" not in same.conclusion


def test_backend_params_validation_and_tags():
    pytest.importorskip("torch")
    from kinetoscope.capture.workloads import attention
    from kinetoscope.errors import UsageError

    assert attention.Params(backend="naive").impl == "naive"
    assert attention.tag(attention.Params(backend="flash")).startswith("sdpa-flash_")
    assert attention.tag(attention.Params()).startswith("sdpa_")  # auto keeps the old tag
    with pytest.raises(UsageError, match="needs --impl sdpa"):
        attention.Params(impl="naive", backend="math")
    with pytest.raises(UsageError, match="--backend must be one of"):
        attention.Params(backend="xformers")
