"""Whether a kernel ran on Tensor Cores (NVIDIA) or matrix cores (AMD MFMA), from its name.

An estimate: the trace records no instruction mix, but the libraries name their
matrix-unit kernels by the instruction family they are built on, so the name is
the evidence and the family that decided is kept with the answer:

- NVIDIA: an MMA shape in the name (`s16816`, `h884`, `s1688`: mma.sync tiles),
  `hmma`/`imma`, `wmma`, `wgmma`/`gmma` (Hopper warpgroup MMA), `tcgen05`/`umma`
  (Blackwell), CUTLASS `tensorop`, cuBLASLt `sm80_xmma`/`sm90_xmma` and `nvjet`
  kernels (except their f32/FFMA variants, which run on the FP32 units),
  FlashAttention/FMHA kernels in 16-bit types, fp8/fp4 GEMMs (those types exist
  only on tensor cores), and `tf32` in the name.
- AMD: Tensile/hipBLASLt `Cijk_*` with an `MI` (MFMA) instruction tile,
  `mfma`, Composable Kernel `xdl` (xdlops), MIOpen's `igemm_*_gtcx*` (xdlops).
- Not: SIMT GEMMs (`sgemm`, `gemmSN`, `gemv`, `simt`, cuDNN `scudnn`, `ffma`),
  fp32 GEMM/convolution names without any of the above, and kernels whose kind
  is no matrix multiply (elementwise, reduction, copy, normalization...).
- Unknown: Triton GEMM kernels (`tl.dot` may or may not lower to MMA; the name
  does not say) and GEMM/attention names in 16-bit types with no family named.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from .kernel_name_record import KernelName

_AMD_LIBS = {"rocBLAS", "hipBLASLt", "Tensile", "CK", "MIOpen"}
#: (family shown as the evidence, pattern) that mean matrix-unit instructions
_TC_FAMILIES = (
    ("wgmma (Hopper warpgroup MMA)", re.compile(r"(?<![A-Za-z])w?gmma", re.I)),
    ("tcgen05/UMMA (Blackwell)", re.compile(r"tcgen05|(?<![A-Za-z])umma", re.I)),
    ("HMMA/IMMA", re.compile(r"(?<![A-Za-z])[hi]mma", re.I)),
    ("WMMA", re.compile(r"(?<![A-Za-z])wmma", re.I)),
    # lowercase in CUTLASS 2/3 kernel names, OpClassTensorOp in its templates; MIOpen's
    # elementwise `SubTensorOp*` is no match
    ("CUTLASS tensorop", re.compile(r"(?<![A-Za-z])tensorop|OpClassTensorOp")),
    ("MFMA", re.compile(r"(?<![A-Za-z])mfma", re.I)),
    ("CK xdlops (xdl)", re.compile(r"(?<![A-Za-z])xdl", re.I)),
    ("MIOpen xdlops igemm (gtcx)", re.compile(r"_gtcx\d*_", re.I)),
)
_XMMA = re.compile(r"sm\d+_xmma", re.I)
_NVJET = re.compile(r"nvjet", re.I)
_SIMT = re.compile(r"simt|sgemm|dgemm|gemmsn|gemv|scudnn|ffma|gcgemm", re.I)
#: GEMM-kind helpers that are no matrix multiply (cuBLAS split-K reduction, dot, GEMV)
_NOT_MATMUL = re.compile(r"gemv|dot_kernel|reduce|splitk", re.I)
_LOW_PRECISION = {"fp8", "fp4", "f8", "e4m3", "e5m2", "mxfp8", "mxfp4", "nvfp4"}
_MATMUL_KINDS = {"gemm", "conv", "attention"}


@dataclass(frozen=True)
class TensorCoreUse:
    """`ran`: True/False, None where the name cannot tell; `family`: what decided."""

    ran: bool | None
    family: str


def tensor_core_use(k: KernelName) -> TensorCoreUse:
    """Tensor Core (or MFMA) use of one kernel, read from its decoded name."""
    raw = k.raw
    fp32 = k.dtype in ("f32", "f64")
    if k.mma:
        unit = "MFMA" if k.library in _AMD_LIBS else "MMA"
        return TensorCoreUse(True, f"{unit} instruction tile {k.mma}")
    for family, pattern in _TC_FAMILIES:
        if pattern.search(raw):
            return TensorCoreUse(True, family)
    if k.dtype == "tf32":
        return TensorCoreUse(True, "tf32 in the name")
    if _XMMA.search(raw) or _NVJET.search(raw):
        lib = "cuBLASLt xmma" if _XMMA.search(raw) else "cuBLASLt nvjet"
        if fp32 or re.search(r"ffma", raw, re.I):
            return TensorCoreUse(False, f"{lib} in f32 (FFMA, the FP32 units)")
        return TensorCoreUse(True, lib)
    if k.kind in _MATMUL_KINDS and k.dtype in _LOW_PRECISION:
        return TensorCoreUse(True, f"{k.dtype} matrix multiply (tensor cores only)")
    if k.library in ("FlashAttention", "FMHA") and k.dtype in ("bf16", "f16", "fp16"):
        return TensorCoreUse(True, f"{k.library} in {k.dtype}")
    if _SIMT.search(raw):
        return TensorCoreUse(False, "SIMT (sgemm/gemmSN/gemv/scudnn/ffma)")
    if k.library == "Triton":
        if k.triton_kind in ("pointwise", "reduction", "persistent reduction"):
            return TensorCoreUse(False, f"Triton {k.triton_kind}")
        return TensorCoreUse(None, "Triton: the name does not show whether tl.dot used MMA")
    if k.kind in _MATMUL_KINDS:
        if fp32:
            return TensorCoreUse(False, f"{k.dtype} {k.kind} without a tensor-core family")
        return TensorCoreUse(None, f"{k.kind}: no tensor-core family in the name")
    return TensorCoreUse(False, f"kind: {k.kind}")


def fp32_without_tf32(k: KernelName, use: TensorCoreUse) -> bool:
    """An fp32 GEMM or convolution on the FP32 units: TF32 (or bf16) would move it onto
    tensor cores on a GPU that has them. GEMV, dot and split-K reductions are left out:
    they stream their operands once and are memory-bound whatever the math unit."""
    return (
        use.ran is False
        and k.kind in ("gemm", "conv")
        and k.dtype == "f32"
        and not _NOT_MATMUL.search(k.raw)
    )
