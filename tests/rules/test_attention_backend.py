"""`attention-backend`: the backend that ran, on CPU traces recorded here and on the corpus.

Corpus expectations were written from the traces' kernel and op names before
running the tool (zcat | grep for flash/fmha/cudnn/attn/sage/paged kernels).
"""

from __future__ import annotations

import pytest

from kinetoscope.analysis.attention import attention_use, kernel_family
from kinetoscope.rules.engine import run_rules
from kinetoscope.trace import load

from ..capture_helpers import record_here
from ..conftest import corpus, gpu_kit_recording


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


def test_naive_attention_is_named_unfused_from_the_call_tree(cpu_backends):
    # the workload's naive path: q @ k^T, scale, masked_fill, softmax, @ v, no SDPA op.
    # Before the call-tree pattern this trace had no finding at all.
    trace = cpu_backends["naive"]
    found = attention_use(trace)
    assert found.backends() == ["unfused"]
    assert len(found.unfused) == 3  # one chain per active step
    assert all(c.shaped for c in found.unfused)  # record_shapes=True: shapes checked
    finding = _finding(trace)
    assert finding.severity == "warn"
    assert "scaled_dot_product_attention" in finding.suggestion


# ---- CPU traces recorded here: hand-written attention and look-alikes ---------------------

_MODULES = r"""
import sys
import torch
from torch.profiler import ProfilerActivity, profile

torch.manual_seed(0)
out, record_shapes = sys.argv[1], sys.argv[2] == "1"


class HandAttention(torch.nn.Module):
    # softmax(q @ k^T / sqrt(d)) -> dropout -> @ v, the eager-transformer way
    def __init__(self):
        super().__init__()
        self.qkv = torch.nn.Linear(32, 96)
        self.drop = torch.nn.Dropout(0.1)

    def forward(self, x):
        q, k, v = self.qkv(x).view(2, 16, 3, 4, 8).permute(2, 0, 3, 1, 4)
        scores = torch.matmul(q, k.transpose(-2, -1)) / 8**0.5
        return torch.matmul(self.drop(torch.softmax(scores, dim=-1)), v)


class ClassifierHead(torch.nn.Module):
    # matmul -> softmax -> matmul, but against weight matrices: a head, not attention
    def __init__(self):
        super().__init__()
        self.w = torch.nn.Parameter(torch.randn(32, 10))
        self.prototypes = torch.nn.Parameter(torch.randn(10, 32))

    def forward(self, x):
        probs = torch.softmax(torch.matmul(x, self.w), dim=-1)
        return torch.matmul(probs, self.prototypes)


class EinsumAttention(torch.nn.Module):
    # the same with einsum: its operands are recorded as one TensorList shape list
    def forward(self, x):
        q = x.view(2, 16, 4, 8).transpose(1, 2)
        p = torch.einsum("bhqd,bhkd->bhqk", q, q).softmax(-1)
        return torch.einsum("bhqk,bhkd->bhqd", p, q)


x = torch.randn(2, 16, 32)
modules = (
    ("hand", HandAttention().train()),
    ("head", ClassifierHead()),
    ("einsum", EinsumAttention()),
)
for name, module in modules:
    with profile(activities=[ProfilerActivity.CPU], record_shapes=record_shapes) as prof:
        for _ in range(2):
            module(x)
    prof.export_chrome_trace(f"{out}/{name}.json")
"""


@pytest.fixture(scope="module")
def cpu_modules(tmp_path_factory):
    """hand / head traces, recorded with and without shapes."""
    pytest.importorskip("torch")
    traces = {}
    for shapes in ("1", "0"):
        out = tmp_path_factory.mktemp(f"modules{shapes}")
        record_here(_MODULES, out, shapes)
        for name in ("hand", "head", "einsum"):
            traces[name, shapes == "1"] = load(out / f"{name}.json")
    return traces


def test_hand_written_attention_module_is_unfused(cpu_modules):
    trace = cpu_modules["hand", True]
    found = attention_use(trace)
    assert found.backends() == ["unfused"]
    assert len(found.unfused) == 2
    chain = found.unfused[0]
    # recorded without with_stack or record_function: the products and the softmax are
    # siblings at the thread's top level (the scope the finding names)
    assert chain.scope == -1
    assert chain.shaped is True and chain.dropout
    finding = _finding(trace)
    assert finding.severity == "warn" and "attention written by hand" in finding.title


def test_hand_written_attention_without_shapes_says_it_is_inferred(cpu_modules):
    found = attention_use(cpu_modules["hand", False])
    assert found.backends() == ["unfused"]
    assert all(c.shaped is None for c in found.unfused)
    assert "op order alone" in _finding(cpu_modules["hand", False]).explanation


def test_einsum_attention_is_unfused_with_its_shapes_checked(cpu_modules):
    # einsum's recorded input dims are [[], [[2, 4, 16, 8], [2, 4, 16, 8]], []]: the tensor
    # list is read as two operands (this raised TypeError before the TensorList case)
    found = attention_use(cpu_modules["einsum", True])
    assert found.backends() == ["unfused"]
    assert [c.shaped for c in found.unfused] == [True, True]


def test_classifier_head_is_not_attention(cpu_modules):
    # matmul(x, W) -> softmax -> matmul(probs, P): W and P are 2-D weights, so the shapes are
    # not attention's (q @ k^T multiplies two batched activations)
    trace = cpu_modules["head", True]
    assert attention_use(trace).uses == []
    assert _finding(trace) is None


def test_sdpa_math_on_cpu_is_not_also_counted_as_hand_written(cpu_backends):
    # the math backend's own bmm/softmax/bmm lie under the SDPA call: one backend, no chain
    found = attention_use(cpu_backends["math"])
    assert found.backends() == ["math"] and found.unfused == []


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


def test_flash_attention_2_on_hopper_points_to_fa3_and_cudnn_and_not_on_rocm():
    # the GPU from deviceProperties: H100 (9.0) runs pytorch_flash (FA2); MI300X runs AOTriton
    h100 = _finding(_corpus_trace("tracelens_h100__Qwen_Qwen1.5-0.5B-Chat__1016005.json.gz"))
    assert "On Hopper FlashAttention-2 does not use" in h100.explanation
    mi300 = _finding(_corpus_trace("tracelens_mi300__Qwen_Qwen1.5-0.5B-Chat__1016005.json.gz"))
    assert "Hopper" not in mi300.explanation and "AOTriton on ROCm" in mi300.explanation


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
    # sage_fwd is 228 kernels summing 9996 us of 196 ms of device work
    assert 0.04 < found.share(sage) < 0.06


def test_xdit_flux_t5_encoder_attention_is_hand_written():
    # FLUX's T5 text encoder: nn.Module: T5Attention_N holds matmul [1,64,512,64]x[1,64,64,512],
    # add_ (position bias), to, softmax [1,64,512,512], type_as, dropout, matmul x [1,64,512,64]
    trace = _corpus_trace("tracelens_xdit_flux.1_aiter_sage__profile_trace_rank_0.json.gz")
    found = attention_use(trace)
    unfused = _use(trace, "unfused")
    assert unfused.calls == len(found.unfused) == 23
    assert all(trace.name(c.scope).startswith("nn.Module: T5Attention") for c in found.unfused)
    assert all(c.shaped and c.dropout for c in found.unfused)


def test_switch_transformer_multiquery_attention_is_hand_written():
    # zeta's MultiQueryAttention: matmul [8,8,128,128]x[8,1,128,128], mul, an inline causal mask
    # (new_ones, tril, to, bitwise_not, slice, slice, view, masked_fill), softmax, to, matmul
    trace = _corpus_trace("switch_transformer_moe_a100.json.gz")
    found = attention_use(trace)
    assert found.backends() == ["unfused"]
    assert len(found.unfused) == 10
    scopes = {trace.name(c.scope) for c in found.unfused}
    assert all(s.startswith("nn.Module: MultiQueryAttention") for s in scopes)
    assert _finding(trace).severity == "warn"


@pytest.mark.parametrize(
    ("name", "backend", "kernel"),
    [
        # SGLang on MI300X: vLLM's ROCm paged attention (ll4mi) kernels
        ("tracelens_sglang_decode__sglang_Qwen3-8B_decode.json.gz", "paged attention", None),
        # vLLM on ROCm: the Triton unified attention kernel
        (
            "tracelens_vllm_prefilldecode_piecewise__graph_execution.json.gz",
            "triton attention",
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
    # fp32 inputs: "use fp16/bf16" is the first fix, and it is said
    assert finding.suggestion.startswith("Use fp16/bf16 (autocast)")


def test_math_pinned_on_bf16_inputs_is_not_told_to_use_bf16():
    """The GPU kit's H100 run with SDPA's math backend pinned (sdpa_kernel(MATH)) on bf16
    inputs (recorded shapes: c10::BFloat16, head dim 64, no mask, no dropout): nothing
    recorded rules flash out, so the fix names the explicit choice first and does not
    tell the run to use the dtype it uses."""
    finding = _finding(load(gpu_kit_recording("attention_math")))
    assert finding.measured["backends"] == ["math"] and finding.measured["math_reasons"] == []
    assert finding.suggestion.startswith("The inputs are already bf16")
    assert "sdpa_kernel(SDPBackend.MATH)" in finding.suggestion
    assert "Use fp16/bf16" not in finding.suggestion


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
        # names as the libraries' sources declare them (flash-attn csrc/, hopper/, FlashInfer
        # include/flashinfer/attention/, FlashMLA csrc/, vLLM csrc/attention/, SGLang triton ops)
        (
            "void flash::flash_fwd_kernel<Flash_fwd_kernel_traits<128, 128, 64, 4, false, false, "
            "cutlass::bfloat16_t>, false, true, false, false, false, true, false, false>"
            "(Flash_fwd_params)",
            "flash-attn 2",
        ),
        (
            "void flash::flash_fwd_splitkv_kernel<Flash_fwd_kernel_traits<128, 64, 128, 4, "
            "false, false, cutlass::half_t>, false, true>(Flash_fwd_params)",
            "flash-attn 2",
        ),
        (
            "void cutlass::device_kernel<flash::enable_sm90_or_later<flash::FlashAttnFwdSm90<"
            "flash::CollectiveMainloopFwdSm90<2, cute::tuple<cute::C<1>, cute::C<1>, "
            "cute::C<1> >, cute::tuple<cute::C<128l>, cute::C<176l>, cute::C<128l> > > > > >"
            "(flash::FlashAttnFwdSm90<x>::Params)",
            "flash-attn 3",
        ),
        (
            "void flash::FlashAttnFwdCombine<cute::tuple<cute::C<8> >, 7, 256>(Params)",
            "flash-attn 3",
        ),
        (
            "void flash::flash_fwd_splitkv_mla_kernel<Flash_fwd_kernel_traits_mla<576, 64, 64, 8, "
            "cutlass::bfloat16_t, 512>, flash::SharedStorageMLA<x> >(Flash_fwd_mla_params)",
            "FlashMLA",
        ),
        (
            "void flashinfer::BatchPrefillWithPagedKVCacheKernel<flashinfer::KernelTraits<"
            "(flashinfer::MaskMode)1, 128u>, flashinfer::BatchPrefillPagedParams<__nv_bfloat16> >"
            "(flashinfer::BatchPrefillPagedParams<__nv_bfloat16>)",
            "FlashInfer",
        ),
        (
            "void flashinfer::BatchDecodeWithPagedKVCacheKernel<(flashinfer::PosEncodingMode)0, "
            "2u, 4u, 8u, 16u, 1u, 8u>(flashinfer::BatchDecodeParams<__nv_bfloat16>)",
            "FlashInfer",
        ),
        (
            "void vllm::paged_attention_v1_kernel<unsigned short, unsigned short, 128, 16, 128, "
            "(vllm::Fp8KVCacheDataType)0, false>(unsigned short*, unsigned short const*)",
            "paged attention",
        ),
        (
            "void ck_tile::kentry<256, 1, ck_tile::FmhaFwdKernel<ck_tile::BlockFmhaPipelineQRKSVS"
            "<x> > >(ck_tile::FmhaFwdKernel<x>::FmhaFwdGroupModeKargs)",
            "CK fmha",
        ),
        ("_fwd_grouped_kernel_stage1", "triton attention"),
        ("_fwd_kernel", "triton attention"),
        # attention libraries' helpers that do not compute attention
        ("create_flashinfer_kv_indices_triton", None),
        (
            "void vllm::reshape_and_cache_flash_kernel<__nv_bfloat16, unsigned char, "
            "(vllm::Fp8KVCacheDataType)1>(__nv_bfloat16 const*)",
            None,
        ),
        ("sage_quant_kernel", None),
        ("_layer_norm_fwd_kernel", None),
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


_LIBRARY_OP = r"""
import sys
import torch
from torch.profiler import ProfilerActivity, profile

# vLLM registers FlashAttention-3 as TORCH_LIBRARY(_vllm_fa3_C) (`torch.ops._vllm_fa3_C.fwd`);
# the profiler records the op by that name. Stand in for it on the CPU with the same name.
@torch.library.custom_op("_vllm_fa3_C::fwd", mutates_args=())
def fwd(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
    return torch.softmax(q @ k.transpose(-2, -1), -1) @ v


q = torch.randn(1, 2, 8, 4)
with profile(activities=[ProfilerActivity.CPU], record_shapes=True) as prof:
    for _ in range(2):
        torch.ops._vllm_fa3_C.fwd(q, q, q)
prof.export_chrome_trace(sys.argv[1])
"""


def test_a_library_attention_op_names_its_backend(tmp_path):
    # the op name is the witness (its kernels, on a GPU, are flash::FlashAttnFwdSm90); the
    # matmul/softmax inside it are the op's own work, not hand-written attention
    pytest.importorskip("torch")
    import subprocess
    import sys

    path = tmp_path / "fa3.json"
    subprocess.run([sys.executable, "-c", _LIBRARY_OP, str(path)], check=True, timeout=300)
    found = attention_use(load(path))
    assert found.backends() == ["flash-attn 3"]
    assert _use(load(path), "flash-attn 3").calls == 2
    assert found.unfused == []
    assert _finding(load(path)).severity == "info"


def test_unfused_chains_time_their_score_passes():
    # switch MoE: each chain's kernels are 2 sgemm (q @ k^T, p @ v) + 10 non-GEMM kernels
    # (mul, ones/tril/bitwise_not mask, masked_fill, softmax, casts): those are the passes a
    # fused kernel avoids; the GEMMs are not counted in the saving
    trace = _corpus_trace("switch_transformer_moe_a100.json.gz")
    unfused = _use(trace, "unfused")
    assert unfused.kernels == 120
    assert 0 < unfused.score_pass_us < unfused.device_us
    finding = _finding(trace)
    assert finding.impact_us == pytest.approx(unfused.score_pass_us)  # no steps: one window


# ---- FlashAttention-3 in a training trace: named from its Hopper kernels --------------------


def _fa3_training(tmp_path, with_attention):
    from ..conftest import write_trace
    from ..cutlass_names import fa3_training_events

    return load(write_trace(tmp_path / "fa3.json", fa3_training_events(with_attention)))


def test_fa3_forward_and_backward_kernels_name_the_backend_without_an_op(tmp_path):
    # no SDPA call, no library op: the FA3 kernels (wrapped in cutlass::device_kernel) alone
    trace = _fa3_training(tmp_path, with_attention=True)
    use = _use(trace, "flash-attn 3")
    assert (use.source, use.kernels, dict(use.passes)) == (
        "kernel",
        4,
        {"forward": 2, "backward": 2},
    )
    finding = _finding(trace)
    assert finding.severity == "info"
    assert "flash-attn 3 (4 kernels, 2 forward and 2 backward, named from the kernels" in (
        finding.title
    )
    # the library line: FA3's 2 x (90 + 180) us of 2 x 450 us is FlashAttention's, not CUTLASS's
    names = [f for f in run_rules(trace, only=["kernel-name"]).findings]
    share = names[0].measured["library_share"]
    assert share["FlashAttention"] == pytest.approx(0.6)
    assert share["CUTLASS"] == pytest.approx((50 + 60 + 30) / 450, abs=1e-4)
    assert names[0].title.startswith("top kernels decoded; kernel time by library: FlashAttention")


def test_cutlass_gemms_are_never_attention(tmp_path):
    # the same steps without the FA3 kernels: grouped FP8 and bf16 CUTLASS 3 GEMMs only
    trace = _fa3_training(tmp_path, with_attention=False)
    assert attention_use(trace).uses == []
    assert _finding(trace) is None
    share = run_rules(trace, only=["kernel-name"]).findings[0].measured["library_share"]
    assert "FlashAttention" not in share and share["CUTLASS"] > 0


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        (
            "void flash::flash_fwd_kernel<Flash_fwd_kernel_traits<64, 128> >(Flash_fwd_params)",
            "forward",
        ),
        (
            "void flash::flash_bwd_dq_dk_dv_loop_seqk_parallel_kernel<Flash_bwd_kernel_traits<64> >"
            "(Flash_bwd_params)",
            "backward",
        ),
        ("fmha_cutlassB_f16_aligned_64x64_k64_sm80", "backward"),
        ("attn_fwd", "forward"),
        ("bwd_kernel_dk_dv", "backward"),
        # a paged decode kernel's name says no pass
        ("void vllm::paged_attention_v1_kernel<unsigned short, 128>(unsigned short*)", None),
    ],
)
def test_attention_kernel_pass_from_the_name(name, expected):
    from kinetoscope.analysis.attention_kernels import kernel_pass

    assert kernel_pass(name) == expected
