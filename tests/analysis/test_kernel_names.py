"""Kernel-name decoding on names taken verbatim from the corpus traces."""

from __future__ import annotations

import pytest

from kinetoscope.analysis.kernel_names import decode, strip_cpp
from kinetoscope.trace import load

from ..conftest import corpus


def test_cutlass_name_gives_every_field():
    k = decode(
        "void cutlass::Kernel2<cutlass_80_tensorop_bf16_s16816gemm_relu_bf16_64x64_64x6_tn_align8>"
        "(cutlass_80_tensorop_bf16_s16816gemm_relu_bf16_64x64_64x6_tn_align8::Params)"
    )
    assert (k.library, k.kind, k.arch, k.dtype, k.mma) == (
        "CUTLASS",
        "gemm",
        "sm80",
        "bf16",
        "s16816",
    )
    assert (k.tile, k.stages, k.layout, k.epilogue) == ("64x64", 6, "tn", ("relu",))
    assert k.short == "cutlass_80_tensorop_bf16_s16816gemm_relu_bf16_64x64_64x6_tn_align8"
    assert k.family == "CUTLASS:gemm"


def test_wmma_mma_shape_and_tf32_simt():
    k = decode("cutlass_80_wmma_tensorop_bf16_s161616gemm_bf16_32x32_128x2_tn_align8")
    assert (k.mma, k.tile, k.stages) == ("s161616", "32x32", 2)
    assert decode("cutlass_80_tensorop_s1688gemm_128x256_32x3_nt_align4").dtype == "tf32"
    assert decode("cutlass_80_simt_sgemm_128x32_8x5_nn_align1").dtype == "f32"


@pytest.mark.parametrize(
    "name, library, arch, dtype, tile, layout",
    [
        ("ampere_sgemm_128x64_tn", "cuBLAS", "ampere", "f32", "128x64", "tn"),
        (
            "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64_warpgroupsize1x1x1_"
            "execute_segment_k_off_kernel__5x_cublas",
            "cuBLAS",
            "sm90",
            "bf16",
            "128x128x64",
            "tn",
        ),
        (
            "sm90_xmma_gemm_f32f32_tf32f32_f32_tn_n_tilesize128x64x32_warpgroupsize1x1x1_"
            "execute_segment_k_off_kernel__5x_cublas",
            "cuBLAS",
            "sm90",
            "tf32",
            "128x64x32",
            "tn",
        ),
        (
            "cudnn_infer_volta_scudnn_128x64_relu_medium_nn_v1",
            "cuDNN",
            "volta",
            "f32",
            "128x64",
            "nn",
        ),
        ("nvjet_tst_144x128_64x6_2x1_v_bz_bias_TNN", "cuBLAS", None, None, "144x128", "tn"),
    ],
)
def test_vendor_gemm_names(name, library, arch, dtype, tile, layout):
    k = decode(name)
    assert (k.library, k.arch, k.dtype, k.tile, k.layout) == (library, arch, dtype, tile, layout)


def test_rocm_tensile_and_miopen_and_ck():
    k = decode(
        "Cijk_Alik_Bljk_BBS_BH_Bias_HA_S_SAV_UserArgs_MT128x64x128_MI16x16x1_SN_LDSB1_AFC1_AG0_"
        "AFEM1_AFEM1_ASEM1_CB0_CD1_1_CLR1_CADS0_ISA942_IU1_K1"
    )
    assert (k.library, k.kind, k.arch, k.dtype) == ("hipBLASLt", "gemm", "gfx942", "bf16")
    assert (k.tile, k.mma, k.layout, k.epilogue) == ("128x64x128", "16x16x1", "tn", ("bias",))
    assert decode("Cijk_Ailk_Bljk_SB_MT64x16x16_MI16x16x1_ISA90a").layout == "nn"
    m = decode("igemm_fwd_gtcx2_nhwc_bf16_bx0_ex1_bt128x128x32_wt32x32x8_ws1x1_wr2x2_gkgs")
    assert (m.library, m.kind, m.dtype, m.tile) == ("MIOpen", "conv", "bf16", "128x128x32")
    ck = decode(
        "_ZN2ck16tensor_operation6device12_GLOBAL__N_139kernel_grouped_conv_fwd_xdl_cshuffle_v3"
        "INS_28GridwiseGemm_xdl_cshuffle_v3IDF16bDF16b"
    )
    assert (ck.library, ck.kind, ck.short, ck.dtype) == (
        "CK",
        "conv",
        "kernel_grouped_conv_fwd_xdl_cshuffle_v3",
        "bf16",
    )


def test_triton_kind_and_fused_ops():
    k = decode("triton_poi_fused__unsafe_view_gelu_mul_0")
    assert (k.library, k.triton_kind, k.kind) == ("Triton", "pointwise", "elementwise")
    assert k.fused_ops == ("_unsafe_view", "gelu", "mul")
    r = decode("triton_red_fused_add_addmm_mul_native_layer_norm_split_unsqueeze_view_22")
    assert r.triton_kind == "reduction"
    assert r.fused_ops == ("add", "addmm", "mul", "native_layer_norm", "split", "unsqueeze", "view")
    p = decode("triton_per_fused__to_copy_addmm_mean_pow_view_7")
    assert p.triton_kind == "persistent reduction" and p.fused_ops[0] == "_to_copy"
    # the graph-order index is not part of the family: the same fusion matches across runs
    assert (
        decode("triton_poi_fused_add_cos_sin_0").family
        == decode("triton_poi_fused_add_cos_sin_7").family
    )


def test_aten_short_names_strip_templates_and_keep_the_functor():
    name = (
        "void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<float>, "
        "at::detail::Array<char*, 3> >(int, at::native::CUDAFunctor_add<float>, "
        "at::detail::Array<char*, 3>)"
    )
    k = decode(name)
    assert (k.library, k.kind, k.short, k.dtype) == (
        "ATen",
        "elementwise",
        "vectorized_elementwise_kernel<CUDAFunctor_add>",
        "f32",
    )
    bf16 = name.replace("<float>", "<c10::BFloat16>")
    assert decode(bf16).short == k.short and decode(bf16).dtype == "bf16"
    copy = decode(
        "void at::native::elementwise_kernel<128, 2, at::native::gpu_kernel_impl<"
        "at::native::direct_copy_kernel_cuda(at::TensorIteratorBase&)::{lambda()#3}> >(int, T)"
    )
    assert copy.short == "elementwise_kernel<direct_copy_kernel_cuda>"
    # scalar-operand wrappers and anonymous namespaces are looked through
    mul = decode(
        "void at::native::vectorized_elementwise_kernel<4, at::native::BUnaryFunctor<float, "
        "float, float, at::native::binary_internal::MulFunctor<float> >, "
        "at::detail::Array<char*, 2> >(int)"
    )
    assert mul.short == "vectorized_elementwise_kernel<MulFunctor>"
    clamp = decode(
        "void at::native::vectorized_elementwise_kernel<4, at::native::(anonymous namespace)::"
        "launch_clamp_scalar(at::TensorIteratorBase&, c10::Scalar)::{lambda()#1}::operator()() "
        "const::{lambda(float)#1}, at::detail::Array<char*, 2> >(int)"
    )
    assert clamp.short == "vectorized_elementwise_kernel<launch_clamp_scalar>"
    assert strip_cpp("std::enable_if<!(false), void>::type internal::gemvx::kernel<int>(int)") == (
        "gemvx::kernel"
    )


def test_library_comes_from_the_kernel_not_its_argument_types():
    k = decode(
        "split_embedding_backward_codegen_adagrad_unweighted_find_long_segments("
        "at::GenericPackedTensorAccessor<int, 1ul, at::RestrictPtrTraits, int>)"
    )
    assert k.library == "FBGEMM"
    assert decode("ncclKernel_AllReduce_RING_LL_Sum_float(ncclDevComm*, unsigned long)").kind == (
        "collective"
    )


@pytest.mark.parametrize(
    "relative, expected",
    [
        (
            "gpu/tracelens_xdit_flux.1_aiter_sage__profile_trace_rank_0.json.gz",
            {"hipBLASLt", "Triton"},
        ),
        ("gpu/resnet50_dataloader_workers0.pt.trace.json.gz", {"cuDNN", "ATen"}),
        ("gpu/sampled_rank0.json.gz", {"CUTLASS", "NCCL", "FBGEMM"}),
    ],
)
def test_every_corpus_kernel_decodes(relative, expected):
    trace = load(corpus(relative))
    decoded = [decode(trace.name(i)) for i in trace.kernels]
    assert decoded and all(k.short and k.family for k in decoded)
    assert expected <= {k.library for k in decoded}
    # short names are short: no template or argument lists left
    assert all("(" not in k.short and len(k.short) < 200 for k in decoded)


def test_trtllm_gen_gemm():
    k = decode(
        "bmm_Bfloat16_MxE2m1MxE4m3_Fp32_t128x16x256u2_s3_et128x16_m128x16x32_cga1x1x1_16dp256b_rM_"
        "TN_transOut_schedP2x1x2x3_biasM_bN_tmaOpt_clmp_dynBatch_sm100f"
    )
    assert (k.library, k.arch, k.dtype, k.tile, k.stages, k.mma, k.layout) == (
        "TensorRT-LLM",
        "sm100",
        "bf16",
        "128x16x256",
        3,
        "128x16x32",
        "tn",
    )
    assert k.epilogue == ("bias",)


@pytest.mark.parametrize(
    "name, fields",
    [
        # cuBLAS tensor-core GEMM names on Ampere
        (
            "ampere_bf16_s16816gemm_bf16_128x64_ldg8_f2f_stages_64x4_tn",
            {
                "library": "cuBLAS",
                "arch": "ampere",
                "dtype": "bf16",
                "mma": "s16816",
                "tile": "128x64",
                "stages": 4,
                "layout": "tn",
            },
        ),
        (
            "ampere_h16816gemm_128x128_ldg8_stages_32x5_tn",
            {"dtype": "f16", "mma": "h16816", "stages": 5},
        ),
        # CUTLASS 3 on Hopper (Inductor's CUTLASS backend)
        (
            "cutlass3x_sm90_tensorop_gemm_bf16_bf16_f32_bf16_bf16_128x256x64_1x2x1_0_tnn_align8_"
            "warpspecialized_cooperative_epi_tma",
            {
                "library": "CUTLASS",
                "arch": "sm90",
                "dtype": "bf16",
                "tile": "128x256x64",
                "layout": "tn",
            },
        ),
        # memory-efficient attention: the template list belongs to a parameter type
        (
            "void fmha_cutlassF_f32_aligned_64x64_rf_sm80(PyTorchMemEffAttention::AttentionKernel"
            "<float, cutlass::arch::Sm80, true, 64, 64, 64, true, true>::Params)",
            {
                "library": "FMHA",
                "kind": "attention",
                "arch": "sm80",
                "short": "fmha_cutlassF_f32_aligned_64x64_rf_sm80",
            },
        ),
        (
            "triton_tem_fused_addmm_0",
            {"library": "Triton", "kind": "gemm", "triton_kind": "template"},
        ),
    ],
)
def test_more_vendor_names(name, fields):
    k = decode(name)
    assert {f: getattr(k, f) for f in fields} == fields


# ---- display: the function name, never the return type ------------------------------------


def _corpus_name(trace: str, part: str) -> str:
    import kinetoscope

    t = kinetoscope.load(corpus(trace))
    return next(t.names[i] for i in set(t.name_id[t.kernels].tolist()) if part in t.names[i])


@pytest.mark.parametrize(
    ("trace", "part", "shown"),
    [
        # cuBLAS GEMV (the CUDA-graph decode kernel): `std::enable_if<!(false), void>::type ...`
        ("gpu/sampled_rank0.json.gz", "gemvx::kernel", "internal::gemvx::kernel<int, int, float"),
        # vLLM's RMS norm: a `>` inside the enable_if condition, `(((8)>(0)))`
        (
            "gpu/tracelens_b200__eager_trace.json.gz",
            "fused_add_rms_norm_kernel",
            "vllm::fused_add_rms_norm_kernel<c10::BFloat16, 8>",
        ),
        (
            "gpu/ncompass_train_with_stack_h100nvl.pt.trace.json.gz",
            "softmax_warp_forward",
            "(anonymous namespace)::softmax_warp_forward<",
        ),
    ],
)
def test_display_name_drops_the_return_type_and_parameters(trace, part, shown):
    from kinetoscope.analysis.kernel_names import display_name

    raw = _corpus_name(trace, part)
    assert raw.startswith(("std::enable_if<", "void "))
    text = display_name(raw, limit=200)
    assert text.startswith(shown)
    assert not text.startswith(("std::", "void ")) and not text.endswith(")")


@pytest.mark.parametrize(
    "name",
    ["Memcpy HtoD (Pinned -> Device)", "fmhaSm100aKernel_QkvE4m3OBfloat16H64PagedKv", "attn_fwd"],
)
def test_display_name_keeps_names_that_are_not_declarations(name):
    from kinetoscope.analysis.kernel_names import display_name

    assert display_name(name) == name


def test_summary_table_shows_the_function_not_std_enable_if():
    import subprocess
    import sys

    b200 = corpus("gpu/tracelens_b200__eager_trace.json.gz")
    done = subprocess.run(
        [sys.executable, "-m", "kinetoscope", "summary", str(b200)],
        capture_output=True,
        text=True,
        timeout=120,
        env={**__import__("os").environ, "COLUMNS": "200"},
    )
    assert done.returncode == 0, done.stderr
    assert "vllm::fused_add_rms_norm_kernel<c10::BFloat16, 8>" in done.stdout
    assert "std::enable_if" not in done.stdout


def test_hotspot_title_names_the_gemv_not_std_enable_if():
    # the profiler-table hotspot title cut the name at its first "(": `std::enable_if<!`
    from kinetoscope.rules.profiler_table import _short

    raw = _corpus_name("gpu/sampled_rank0.json.gz", "gemvx::kernel")
    assert _short(raw).startswith("internal::gemvx::kernel<")
