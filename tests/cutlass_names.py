"""Real FlashAttention-3 and CUTLASS 3 kernel names, shared by the decoding, attention and
report tests.

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


#: A cuBLAS GEMM recorded on an H100 (corpus tiny_transformer_block_h100).
XMMA_GEMM = (
    "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64_warpgroupsize1x1x1_"
    "execute_segment_k_off_kernel__5x_cublas"
)


def fa3_training_events(with_attention: bool = True) -> list[dict]:
    """Two training steps on an H100, no SDPA call and no attention op recorded (a model
    calling flash-attn's Hopper build through its own autograd Function): per step a cuBLAS
    GEMM, the FA3 forward kernel, an FP8 grouped GEMM (MoE experts) and, in the backward,
    the FA3 backward kernel. `with_attention=False` keeps the GEMMs only: the must-not-fire
    twin, whose CUTLASS kernels are never attention."""
    from .conftest import kernel, launch, op

    events = [
        {
            "ph": "M",
            "name": "process_name",
            "pid": 0,
            "args": {"name": "GPU 0 (NVIDIA H100 80GB HBM3)"},
        }
    ]
    work = [
        ("aten::mm", XMMA_GEMM, 40.0),
        ("nn.Module: FlashSelfAttention", FA3_FWD if with_attention else None, 90.0),
        ("_C::cutlass_moe_mm", FP8_GROUPED[0], 50.0),
        ("_C::cutlass_moe_mm", FP8_GROUPED[1], 60.0),
        ("aten::mm", BF16_GROUPED, 30.0),
        (
            "autograd::engine::evaluate_function: FlashAttnFuncBackward",
            FA3_BWD if with_attention else None,
            180.0,
        ),
    ]
    corr = 0
    for step in (1, 2):
        t0 = (step - 1) * 1000.0
        events.append(op(f"ProfilerStep#{step}", t0, 900.0, cat="user_annotation"))
        for k, (host, name, dur) in enumerate(work):
            if name is None:
                continue
            corr += 1
            at = t0 + 10.0 + 100.0 * k
            events.append(op(host, at, 20.0))
            events.append(launch(at + 2.0, 5.0, corr))
            events.append(kernel(name, at + 30.0, dur, corr))
    return events
