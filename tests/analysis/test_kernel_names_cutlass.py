"""CUTLASS 3 / CuTe `device_kernel<...>` names read as the kernel inside them.

Names and where they come from (demangled as Kineto/nsys record them):
- FA3 forward and combine: SGLang decode/prefill kernel tables that list the kernels of
  real H100 runs verbatim (the `layer_indicator_kernel`/"Attention Core" entries of a
  DeepEP/SGLang trace-analysis script, found with the `search` tool's code corpus).
- FA3 backward: the type flash-attention's hopper/flash_bwd_launch_template.h launches,
  `flash::enable_sm90_or_later<flash::FlashAttnBwdSm90<CollectiveMainloopBwdSm90<Stages,
  Stages_dO, Stages_dS, ClusterShape, TileShape_MNK, Element, ElementAccum, Sm90, ...>,
  CollectiveEpilogueBwd<...>, Scheduler>>`, written out as the demangler prints it.
- the grouped GEMM: the `GemmUniversal<GroupProblemShape<...>, CollectiveMma<...>>` type
  of CUTLASS example 57 (hopper grouped GEMM) as printed in a CUTLASS study note; the
  three FP8 variants are that name with `cutlass::float_e4m3_t` operands and the tile,
  cluster and schedule of example 57's FP8 configs (cooperative 256x128x128 / 1x2x1,
  pingpong 128x128x128 / 2x1x1) and vLLM's 128x128x64, wrapped in vLLM's anonymous
  `enable_sm90_or_later` guard (csrc/quantization/cutlass_w8a8/moe/grouped_mm_c3x.cu).
"""

from __future__ import annotations

import pytest

from kinetoscope.analysis.kernel_names import decode, display_name
from kinetoscope.analysis.kernel_types import kernel_type

_FA3_FWD_T = (
    "flash::enable_sm90_or_later<flash::FlashAttnFwdSm90<flash::CollectiveMainloopFwdSm90<2, "
    "cute::tuple<cute::C<1>, cute::C<1>, cute::C<1> >, cute::tuple<cute::C<128>, cute::C<128>, "
    "cute::C<192> >, 128, cutlass::bfloat16_t, float, cutlass::arch::Sm90, true, false, false, "
    "true, false, false, false, true, true, false, false, false>, flash::CollectiveEpilogueFwd<"
    "cute::tuple<cute::C<128>, cute::C<128>, cute::C<128> >, cute::tuple<cute::C<1>, cute::C<1>, "
    "cute::C<1> >, cutlass::bfloat16_t, cutlass::arch::Sm90, 256, true, false, false, false>, "
    "flash::VarlenDynamicPersistentTileScheduler<128, 256, 32, false, false, true> > >"
)
FA3_FWD = f"void cutlass::device_kernel<{_FA3_FWD_T} >({_FA3_FWD_T}::Params)"
_FA3_BWD_T = (
    "flash::enable_sm90_or_later<flash::FlashAttnBwdSm90<flash::CollectiveMainloopBwdSm90<2, 2, "
    "2, cute::tuple<cute::C<1>, cute::C<1>, cute::C<1> >, cute::tuple<cute::C<64>, cute::C<128>, "
    "cute::C<128> >, cutlass::bfloat16_t, float, cutlass::arch::Sm90, true, false, false, false, "
    "false, false, true, false, 2, 1, 2, 1, false>, flash::CollectiveEpilogueBwd<cute::tuple<"
    "cute::C<64>, cute::C<128>, cute::C<128> >, cutlass::bfloat16_t, cutlass::arch::Sm90, 256, "
    "false, false, 2, false>, flash::SingleTileScheduler<false, false, false, 128> > >"
)
FA3_BWD = f"void cutlass::device_kernel<{_FA3_BWD_T} >({_FA3_BWD_T}::Params)"
_COMBINE_T = (
    "flash::FlashAttnFwdCombine<cute::tuple<cute::C<8>, cute::C<128> >, 6, 256, 1, false, true, "
    "cutlass::bfloat16_t, float, cutlass::arch::Sm90>"
)
FA3_COMBINE = f"void cutlass::device_kernel<{_COMBINE_T} >({_COMBINE_T}::Params)"

_GROUPED_T = (
    "cutlass::gemm::kernel::GemmUniversal<cutlass::gemm::GroupProblemShape<cute::tuple<int32_t, "
    "int32_t, int32_t>>, cutlass::gemm::collective::CollectiveMma<cutlass::gemm::"
    "MainloopSm90ArrayTmaGmmaWarpSpecialized<3, CLUSTER, cutlass::gemm::SCHEDULE>, TILE, "
    "ELEMENT, cute::tuple<int64_t, cute::C<1>, cute::C<0>> *, ELEMENT, cute::tuple<int64_t, "
    "cute::C<1>, cute::C<0>> *, cute::TiledMMA<cute::MMA_Atom<cute::SM90::GMMA::"
    "MMA_64x128x16_F32BF16BF16_SS<cute::SM90::GMMA::Major::K, cute::SM90::GMMA::Major::K, "
    "cute::SM90::GMMA::ScaleIn::One, cute::SM90::GMMA::ScaleIn::One>>, cute::Layout<cute::tuple<"
    "cute::_1, cute::_1, cute::_1>, cute::tuple<cute::C<0>, cute::C<0>, cute::C<0>>>, "
    "cute::tuple<cute::Underscore, cute::Underscore, cute::Underscore>>, cute::SM90_TMA_LOAD, "
    "cute::ComposedLayout<cute::Swizzle<3, 4, 3>, cute::smem_ptr_flag_bits<16>, cute::Layout<"
    "cute::tuple<cute::_8, cute::_64>, cute::tuple<cute::_64, cute::_1>>>, void, cute::identity, "
    "cute::SM90_TMA_LOAD_MULTICAST, cute::ComposedLayout<cute::Swizzle<3, 4, 3>, "
    "cute::smem_ptr_flag_bits<16>, cute::Layout<cute::tuple<cute::_8, cute::_64>, cute::tuple<"
    "cute::_64, cute::_1>>>, void, cute::identity>, cutlass::epilogue::collective::"
    "CollectiveEpilogue<cutlass::epilogue::Sm90PtrArrayTmaWarpSpecialized<4, 2, 16, true, false, "
    "2>, TILE, cute::tuple<cute::C<64>, cute::C<32>>, cutlass::bfloat16_t, cute::tuple<int64_t, "
    "cute::C<1>, cute::C<0>> *, cutlass::bfloat16_t, cute::tuple<int64_t, cute::C<1>, "
    "cute::C<0>> *, cutlass::epilogue::fusion::FusionCallbacks<cutlass::epilogue::"
    "Sm90PtrArrayTmaWarpSpecialized<4, 2, 16, true, false, 2>, cutlass::epilogue::fusion::"
    "LinearCombination<cutlass::bfloat16_t, float, cutlass::bfloat16_t, float, cutlass::"
    "FloatRoundStyle::round_to_nearest>, TILE, cute::tuple<cute::C<64>, cute::C<32>>>, "
    "cute::SM90_TMA_LOAD, cute::ComposedLayout<cute::Swizzle<2, 4, 3>, cute::smem_ptr_flag_bits"
    "<16>, cute::Layout<cute::tuple<cute::C<8>, cute::C<32>>, cute::tuple<cute::_32, cute::_1>>>, "
    "cute::SM75_U32x4_LDSM_N, cute::SM90_TMA_STORE, cute::ComposedLayout<cute::Swizzle<2, 4, 3>, "
    "cute::smem_ptr_flag_bits<16>, cute::Layout<cute::tuple<cute::C<8>, cute::C<32>>, "
    "cute::tuple<cute::_32, cute::_1>>>, cute::SM90_U32x4_STSM_N, cute::Copy_Atom<"
    "cute::SM90_U32x4_STSM_N, cutlass::half_t>, void>, void, void>"
)


def grouped(tile, cluster, schedule, element="cutlass::bfloat16_t", guard=False) -> str:
    t = (
        _GROUPED_T.replace("TILE", tile)
        .replace("CLUSTER", cluster)
        .replace("SCHEDULE", schedule)
        .replace("ELEMENT", element)
    )
    if guard:
        t = f"(anonymous namespace)::enable_sm90_or_later<{t}>"
    return f"void cutlass::device_kernel<{t} >({t}::Params)"


# example 57's bf16 kernel as printed, and three FP8 grouped GEMMs
BF16_GROUPED = grouped(
    "cute::tuple<cute::_128, cute::_128, cute::_128>",
    "cute::tuple<cute::_2, cute::_1, cute::_1>",
    "KernelPtrArrayTmaWarpSpecializedPingpong",
)
FP8_GROUPED = [
    grouped(tile, cluster, schedule, "cutlass::float_e4m3_t", guard=True)
    for tile, cluster, schedule in (
        (
            "cute::tuple<cute::C<128>, cute::C<128>, cute::C<64> >",
            "cute::tuple<cute::C<1>, cute::C<2>, cute::C<1> >",
            "KernelPtrArrayTmaWarpSpecializedCooperativeFP8FastAccum",
        ),
        (
            "cute::tuple<cute::_256, cute::_128, cute::_128>",
            "cute::tuple<cute::_1, cute::_2, cute::_1>",
            "KernelPtrArrayTmaWarpSpecializedCooperativeFP8FastAccum",
        ),
        (
            "cute::tuple<cute::_128, cute::_128, cute::_128>",
            "cute::tuple<cute::_2, cute::_1, cute::_1>",
            "KernelPtrArrayTmaWarpSpecializedPingpongFP8FastAccum",
        ),
    )
]


@pytest.mark.parametrize(
    ("name", "shown"),
    [
        (FA3_FWD, "FlashAttnFwdSm90 (FA3 forward, bf16, tile 128x128, hdim 192)"),
        (FA3_BWD, "FlashAttnBwdSm90 (FA3 backward, bf16, tile 64x128, hdim 128)"),
        (FA3_COMBINE, "FlashAttnFwdCombine (FA3 split-KV combine, bf16)"),
    ],
)
def test_fa3_kernels_read_as_fa3(name, shown):
    k = decode(name)
    assert k.short == shown
    assert (k.library, k.kind, k.arch, k.dtype) == ("FlashAttention", "attention", "sm90", "bf16")
    assert kernel_type(name) == "attention"
    # the display name every view uses: the kernel inside, not the wrapper or its guard
    assert display_name(name) == shown
    assert "enable_sm90_or_later" not in display_name(name, 1000)


def test_grouped_gemm_gives_tile_cluster_dtype_and_schedule():
    k = decode(BF16_GROUPED)
    assert k.short == (
        "GemmUniversal (grouped GEMM, bf16, tile 128x128x128, cluster 2x1x1, pingpong)"
    )
    assert (k.library, k.kind, k.family, k.arch, k.tile) == (
        "CUTLASS",
        "gemm",
        "CUTLASS:gemm",
        "sm90",
        "128x128x128",
    )
    assert kernel_type(BF16_GROUPED) == "gemm"


def test_three_fp8_grouped_gemms_are_three_names():
    # before: all three read `cutlass::device_kernel<enable_sm90_or_later>`
    shown = [display_name(n) for n in FP8_GROUPED]
    assert shown == [
        "GemmUniversal (grouped GEMM, fp8 e4m3, tile 128x128x64, cluster 1x2x1, cooperative)",
        "GemmUniversal (grouped GEMM, fp8 e4m3, tile 256x128x128, cluster 1x2x1, cooperative)",
        "GemmUniversal (grouped GEMM, fp8 e4m3, tile 128x128x128, cluster 2x1x1, pingpong)",
    ]
    assert {decode(n).dtype for n in FP8_GROUPED} == {"fp8"}
    # not attention: a plain CUTLASS GEMM is never called FlashAttention
    assert {decode(n).library for n in FP8_GROUPED} == {"CUTLASS"}
    assert {kernel_type(n) for n in FP8_GROUPED} == {"gemm"}


@pytest.mark.parametrize(
    "name",
    [
        # CUTLASS 2 wrappers keep their own decoder (the instance name says everything)
        "void cutlass::Kernel2<cutlass_80_tensorop_bf16_s16816gemm_relu_bf16_64x64_64x6_tn_align8>"
        "(cutlass_80_tensorop_bf16_s16816gemm_relu_bf16_64x64_64x6_tn_align8::Params)",
        # an operator this decoder does not read: the generic C++ reading, as before
        "void cutlass::device_kernel<flat::kernel::FlatKernelTmaWarpSpecializedDeltaRule<"
        "flat::collective::X> >(flat::kernel::FlatKernelTmaWarpSpecializedDeltaRule<"
        "flat::collective::X>::Params)",
    ],
)
def test_other_wrapped_kernels_are_left_to_the_other_decoders(name):
    k = decode(name)
    assert k.library != "FlashAttention"
    assert "FA3" not in k.short and "grouped GEMM" not in k.short
