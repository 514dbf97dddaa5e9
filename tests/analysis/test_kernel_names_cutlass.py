"""CUTLASS 3 / CuTe `device_kernel<...>` names read as the kernel inside them (the names and
their sources: tests/cutlass_names.py)."""

from __future__ import annotations

import pytest

from kinetoscope.analysis.kernel_names import decode, display_name
from kinetoscope.analysis.kernel_types import kernel_type

from ..cutlass_names import BF16_GROUPED, FA3_BWD, FA3_COMBINE, FA3_FWD, FP8_GROUPED


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


def test_fa3_in_the_casted_demangler_form():
    # nsys/cu++filt print constants with casts: `cute::C<(int)128>`, `(bool)1`, no space
    # before `>>` (a profile write-up listing an H100 run's kernels; its epilogue was cut
    # off there and is completed here with the forward's usual scheduler)
    inner = (
        "flash::enable_sm90_or_later<flash::FlashAttnFwdSm90<flash::CollectiveMainloopFwdSm90<"
        "(int)2, cute::tuple<cute::C<(int)1>, cute::C<(int)1>, cute::C<(int)1>>, cute::tuple<"
        "cute::C<(int)128>, cute::C<(int)128>, cute::C<(int)128>>, (int)128, cutlass::half_t, "
        "float, cutlass::arch::Sm90, (bool)1, (bool)0, (bool)0, (bool)1, (bool)1, (bool)0, "
        "(bool)0, (bool)1, (bool)1, (bool)1, (bool)0, (bool)0, cutlass::bfloat16_t>, "
        "flash::CollectiveEpilogueFwd<cute::tuple<cute::C<(int)128>, cute::C<(int)128>, "
        "cute::C<(int)128>>, cute::tuple<cute::C<(int)1>, cute::C<(int)1>, cute::C<(int)1>>, "
        "cutlass::half_t, cutlass::arch::Sm90, (int)256, (bool)1, (bool)0, (bool)0, (bool)0>, "
        "flash::StaticPersistentTileScheduler<(bool)0>>>"
    )
    k = decode(f"void cutlass::device_kernel<{inner}>({inner}::Params)")
    assert k.short == "FlashAttnFwdSm90 (FA3 forward, f16, tile 128x128, hdim 128)"
    assert (k.library, k.dtype, k.tile) == ("FlashAttention", "f16", "128x128")
