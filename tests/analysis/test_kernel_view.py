"""The kernel view on corpus GPU traces: launch configuration, occupancy and Tensor Cores.

Expectations are read from the traces (`zcat ... | python -c` over the kernel events'
args and `deviceProperties`), then derived by hand with the CUDA occupancy calculator's
rules (analysis/occupancy.py's docstring cites them):

- tracelens_h100 Qwen (H100, cc 9.0): the first `sm90_xmma_gemm_bf16bf16_...` call has
  grid [132,1,1], block [384,1,1], 168 registers, 231424 B shared memory, blocks per SM
  1.0, warps per SM 12.0, est. achieved occupancy 0 (Kineto's calculator call refuses
  > 48 KiB). 168 regs x 32 = 5376 per warp; 16384 per sub-partition holds 3 warps, 12
  per SM: one 12-warp block; 231424 + 1024 reserved = 232448 B, one block in 228 KiB.
  One block of 12 warps of 64: 18.75%. `flash_fwd_kernel`: 128 threads, 255 registers
  (8192 per warp: 2 per sub-partition, 8 warps, 2 blocks), 49152 B: 2 x 4 warps =
  12.5%; Kineto recorded 13 on every call.
- resnet_train_ns (V100, cc 7.0): `volta_sgemm_64x64_nt` 64 threads, 126 registers
  (4096 per warp: 4 per sub-partition, 16 warps, 8 two-warp blocks), 8192 B: 8 x 2 / 64
  = 25%. `bn_bw_1C11_kernel_new` 512 threads, 40 registers (1280 per warp: 12 per
  sub-partition, 48 warps, 3 sixteen-warp blocks): 75%; first call 1.6 blocks per SM,
  recorded 40 = 1.6 x 512 / 2048.
- alexnet_train (A100, cc 8.0): `ampere_sgemm_32x32_sliced1x4_tn` 128 threads, 86
  registers, 32768 B: (32768 + 1024) B allows 4 blocks in 164 KiB, registers 5: shared
  memory limits, 4 x 4 / 64 = 25% (recorded 25).
"""

from __future__ import annotations

import numpy as np
import pytest

from kinetoscope.analysis.gpu_arch import gpu_arch
from kinetoscope.analysis.kernel_view import kernel_view
from kinetoscope.analysis.occupancy import occupancy, sm_limits
from kinetoscope.trace import load

from ..conftest import corpus

H100_QWEN = "gpu/tracelens_h100__Qwen_Qwen1.5-0.5B-Chat__1016005.json.gz"
MI300_QWEN = "gpu/tracelens_mi300__Qwen_Qwen1.5-0.5B-Chat__1016005.json.gz"
V100 = "gpu/resnet_train_ns.pt.trace.json.gz"
A100 = "gpu/alexnet_train.json.gz"
B200 = "gpu/tracelens_b200__eager_trace.json.gz"


@pytest.fixture(scope="module")
def views():
    out = {}
    for name in (H100_QWEN, MI300_QWEN, V100, A100, B200):
        trace = load(corpus(name))
        out[name] = (trace, kernel_view(trace))
    return out


def _row(view, prefix: str):
    return next(r for r in view.rows if r.raw.startswith(prefix))


def _first_config(trace, prefix: str) -> int:
    ka = trace.kernel_args
    for p, event in enumerate(ka.index.tolist()):
        if trace.names[trace.name_id[event]].startswith(prefix):
            return p
    raise AssertionError(prefix)


def test_args_are_kept_as_recorded(views):
    trace, _ = views[H100_QWEN]
    p = _first_config(trace, "sm90_xmma_gemm_bf16bf16")
    ka = trace.kernel_args
    assert ka.grid[p].tolist() == [132, 1, 1]
    assert ka.block[p].tolist() == [384, 1, 1]
    assert (ka.registers[p], ka.shared_memory[p]) == (168, 231424)
    assert (ka.blocks_per_sm[p], ka.warps_per_sm[p], ka.occupancy[p]) == (1.0, 12.0, 0.0)


def test_h100_gemm_occupancy_from_the_calculator(views):
    trace, view = views[H100_QWEN]
    row = _row(view, "sm90_xmma_gemm_bf16bf16")
    assert (row.registers, row.shared_memory, row.block) == (168, 231424, (384, 1, 1))
    assert row.theoretical_occupancy == pytest.approx(12 / 64)
    assert set(row.limiters) == {"registers", "shared memory"}
    assert "168 registers/thread" in row.limiter_note
    # recorded 0 (refused); the estimate is the calculator's, never above one block per SM
    assert 0 < row.est_achieved_occupancy <= 12 / 64 + 1e-9
    assert view.recomputed_calls >= row.calls
    flash = _row(view, "void pytorch_flash::flash_fwd_kernel")
    assert flash.registers == 255 and flash.shared_memory == 49152
    assert flash.theoretical_occupancy == pytest.approx(8 / 64)
    assert flash.limiters == ("registers",)
    assert flash.est_achieved_occupancy == pytest.approx(0.13)  # recorded 13 on every call


def test_v100_and_a100_limiters(views):
    _, v100 = views[V100]
    sgemm = _row(v100, "volta_sgemm_64x64_nt")
    assert sgemm.registers == 126 and sgemm.theoretical_occupancy == pytest.approx(0.25)
    assert sgemm.limiters == ("registers",)
    bn = _row(v100, "void cudnn::bn_bw_1C11_kernel_new<float, float, float2, 128")
    assert bn.theoretical_occupancy == pytest.approx(0.75) and bn.limiters == ("registers",)
    _, a100 = views[A100]
    amp = _row(a100, "ampere_sgemm_32x32_sliced1x4_tn")
    assert (amp.registers, amp.shared_memory) == (86, 32768)
    assert amp.limiters == ("shared memory",)
    assert amp.theoretical_occupancy == pytest.approx(0.25)
    assert amp.est_achieved_occupancy == pytest.approx(0.25)


@pytest.mark.parametrize(
    "name",
    [V100, "gpu/param_linear_train_2080ti.json.gz", A100, H100_QWEN, B200],
)
def test_calculator_agrees_with_kineto_where_it_computed(name):
    """Wherever Kineto recorded a non-zero estimate, the tables here give the same
    figure (within its rounding to a whole percent): a wrong warp, register or shared
    memory limit for any of Volta, Turing, Ampere, Hopper or Blackwell fails this."""
    trace = load(corpus(name))
    arch = gpu_arch(trace)
    limits = sm_limits(arch.vendor, arch.compute_capability)
    ka = trace.kernel_args
    checked = 0
    for p in np.flatnonzero(ka.occupancy > 0).tolist():
        threads = int(np.prod(ka.block[p]))
        occ = occupancy(limits, threads, int(ka.registers[p]), int(ka.shared_memory[p]))
        assert occ is not None
        got = occ.achieved(float(ka.blocks_per_sm[p]), threads, limits) * 100
        assert abs(got - ka.occupancy[p]) <= 1.0, (trace.names[trace.name_id[ka.index[p]]], p)
        checked += 1
    assert checked > 50


def test_tensor_cores_must_fire(views):
    _, h100 = views[H100_QWEN]
    assert _row(h100, "sm90_xmma_gemm_bf16bf16").tensor_cores is True
    assert _row(h100, "void pytorch_flash::flash_fwd_kernel").tensor_cores is True
    _, b200 = views[B200]
    nvjet = _row(b200, "nvjet_tst_64x64")
    assert nvjet.tensor_cores is True and "nvjet" in nvjet.tensor_core_family
    _, mi300 = views[MI300_QWEN]
    mfma = _row(mi300, "Cijk_Alik_Bljk_B_BS_BH_Bias_HA_S_SAV_UserArgs_MT256x128x64_MI16x16x1")
    assert mfma.tensor_cores is True and "MFMA" in mfma.tensor_core_family
    _, a100 = views[A100]
    assert _row(a100, "sm80_xmma_fprop_implicit_gemm_indexed_tf32f32").tensor_cores is True
    # the share is the time of exactly those kernels over all kernel time
    tc = sum(r.total_us for r in h100.rows if r.raw.startswith(("sm90_xmma", "void pytorch_flash")))
    assert h100.tensor_core_us == pytest.approx(tc)


def test_tensor_cores_must_not_fire(views):
    _, h100 = views[H100_QWEN]
    elementwise = [r for r in h100.rows if "elementwise_kernel" in r.raw]
    assert elementwise and all(r.tensor_cores is False for r in elementwise)
    _, v100 = views[V100]
    assert v100.tensor_core_us == 0.0  # fp32 SIMT cuDNN/cuBLAS kernels only
    assert _row(v100, "volta_sgemm_64x64_nt").tensor_cores is False
    _, mi300 = views[MI300_QWEN]
    # AMD's Triton flash attention: the name cannot tell
    assert _row(mi300, "attn_fwd").tensor_cores is None


def test_fp32_without_tf32_only_where_the_gpu_has_tf32(views):
    _, a100 = views[A100]
    assert _row(a100, "ampere_sgemm_32x32_sliced1x4_tn").fp32_without_tf32
    assert _row(a100, "cudnn_ampere_scudnn_128x64").fp32_without_tf32
    assert not _row(a100, "sm80_xmma_fprop_implicit_gemm_indexed_tf32f32").fp32_without_tf32
    assert a100.tf32_capable and a100.fp32_no_tf32_us >= 2621.0 + 2069.0
    # V100 has no TF32: its sgemm time is no candidate
    _, v100 = views[V100]
    assert not v100.tf32_capable and v100.fp32_no_tf32_us == 0.0


def test_amd_occupancy_is_not_computed(views):
    _, mi300 = views[MI300_QWEN]
    assert mi300.est_achieved_occupancy is None
    assert all(r.theoretical_occupancy is None for r in mi300.rows)
    assert any("ROCm traces record no register" in n for n in mi300.notes)


def test_unknown_device_is_not_computed(tmp_path):
    from ..conftest import kernel, write_trace

    args = {"grid": [4, 1, 1], "block": [128, 1, 1], "registers per thread": 32}
    path = write_trace(tmp_path / "t.json", [kernel("k", 0, 5, 1, **args)])
    view = kernel_view(load(path))
    assert view.rows[0].theoretical_occupancy is None
    assert view.est_achieved_occupancy is None
    assert any("no occupancy table" in n for n in view.notes)


def _kit(name: str):
    from ..conftest import GPU_KIT_H100

    return kernel_view(load(GPU_KIT_H100 / f"{name}.json.gz"))


def test_h100_recordings_fp32_against_bf16():
    """Our own H100 recordings (tests/data/gpu_kit_h100/README.md): `matmul_add --dtype
    fp32` ran cuBLASLt's FFMA `sm80_xmma_gemm_f32f32_..._ffma` with TF32 off (PyTorch's
    default), the bf16 run `nvjet_sm90_tst_*`: one must be the TF32 candidate, the other
    on Tensor Cores."""
    fp32 = _kit("matmul_add_4096_fp32_warm")
    gemm = _row(fp32, "sm80_xmma_gemm_f32f32")
    assert gemm.tensor_cores is False and gemm.fp32_without_tf32
    assert fp32.tensor_core_us == 0.0 and fp32.fp32_no_tf32_us == pytest.approx(gemm.total_us)
    bf16 = _kit("matmul_add_4096_bf16_warm")
    nvjet = _row(bf16, "nvjet_sm90_tst")
    assert nvjet.tensor_cores is True and not nvjet.fp32_without_tf32
    assert bf16.fp32_no_tf32_us == 0.0 and bf16.tensor_core_us == pytest.approx(nvjet.total_us)


@pytest.mark.parametrize(
    ("backend", "prefix"),
    [
        ("attention_flash", "void pytorch_flash::flash_fwd_kernel"),
        ("attention_efficient", "fmha_cutlassF_bf16"),
        ("attention_cudnn", "cudnn_generated_fort_native_sdpa_sm90_flash_fprop_wgmma"),
    ],
)
def test_h100_attention_backends_on_tensor_cores(backend, prefix):
    assert _row(_kit(backend), prefix).tensor_cores is True


def test_h100_math_attention_gemms_are_fp32():
    """SDPA's math backend upcasts bf16 to fp32: its bmm runs FFMA xmma GEMMs."""
    view = _kit("attention_math")
    gemms = [r for r in view.rows if r.raw.startswith("sm80_xmma_gemm_f32f32")]
    assert gemms and all(r.fp32_without_tf32 and r.tensor_cores is False for r in gemms)
    assert view.tensor_core_us == 0.0


def test_miopen_elementwise_tensor_op_is_not_cutlass_tensorop():
    """MIOpen's `SubTensorOpWithCastTensor1d` (an elementwise op over a tensor) holds
    "TensorOp" as CUTLASS's `OpClassTensorOp` does: only the latter is a Tensor Core
    family; the MIOpen xdlops convolutions of the same run (`igemm_*_gtcx*`) are."""
    view = kernel_view(load(corpus("gpu/tracelens_mi300__resnet_act_checkpoint.json.gz")))
    assert _row(view, "SubTensorOpWithCastTensor1d").tensor_cores is False
    gtcx = [r for r in view.rows if r.raw.startswith("igemm_") and "_gtcx" in r.raw]
    assert gtcx and all(r.tensor_cores is True for r in gtcx)


def test_blocks_per_sm_written_inf_reads_as_absent(tmp_path):
    """Kineto writes "blocks per SM": "inf" (text) where it divided by a zero SM count."""
    from ..conftest import kernel, write_trace

    args = {"grid": [4, 1, 1], "block": [128, 1, 1], "blocks per SM": "inf",
            "warps per SM": "inf", "registers per thread": 32, "shared memory": 0}  # fmt: skip
    path = write_trace(tmp_path / "t.json", [kernel("k", 0, 5, 1, **args)])
    trace = load(path)
    assert np.isinf(trace.kernel_args.blocks_per_sm[0])
    row = kernel_view(trace).rows[0]
    assert row.blocks_per_sm is None and row.warps_per_sm is None and row.registers == 32
