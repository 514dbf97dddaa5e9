"""Kernel-name rules (docs/rules.md, "Kernel names"): `kernel-name`, what the top kernels'
names say, and `fp32-gemm-tf32`, fp32 matrix multiplies on a GPU with TF32 tensor cores."""

from __future__ import annotations

import numpy as np

from ..analysis.gpu_arch import gpu_arch
from ..analysis.gpu_lane import kernel_totals
from ..analysis.kernel_names import decoded
from ..analysis.peaks import device_peaks
from ..formatting.units import count, fmt_us, share_of
from ..trace import Trace
from .base import Evidence, Finding, rule
from .requires import need_kernels


@rule("kernel-name", "kernel-names", "decode the top kernels' names", top=5)
def kernel_name(ctx) -> list[Finding]:
    trace = ctx.trace
    need_kernels(trace)
    rows, total = kernel_totals(trace)
    if not rows:
        return []
    evidence = []
    libraries: dict[str, float] = {}
    for row in rows:
        k = decoded(trace, trace.names[row.name_id])
        libraries[k.library] = libraries.get(k.library, 0.0) + row.device_us
    for row in rows[: int(ctx.threshold("top"))]:
        k = decoded(trace, trace.names[row.name_id])
        first = int(row.instances[0])
        evidence.append(
            Evidence(
                f"{k.short}: {k.describe()} -- {fmt_us(row.device_us, 1)} in "
                f"{count(row.calls, 'call')} ({share_of(row.device_us, total, 'kernel time')})",
                name=trace.names[row.name_id],
                ts_us=trace.rel(trace.ts[first]),
                dur_us=float(trace.dur[first]),
                value=row.device_us,
                unit="us",
            )
        )
    # each library's share of kernel time; none when the kernels sum to no time
    shares = {lib: us / total if total > 0 else None for lib, us in libraries.items()}
    split = (
        ", ".join(
            f"{lib} {shares[lib]:.0%}"
            for lib, _us in sorted(libraries.items(), key=lambda kv: -kv[1])[:5]
        )
        if total > 0
        else "none recorded (the kernels' durations are 0 or missing)"
    )
    return [
        Finding(
            id="kernel-name",
            severity="info",
            title=f"top kernels decoded; kernel time by library: {split}",
            explanation=(
                "A kernel's name records the dispatcher's choice: the library (cuBLAS, CUTLASS, "
                "cuDNN, Triton, ATen, rocBLAS/hipBLASLt...), the architecture it was built for, "
                "the data type, the tile and pipeline stages, which operands are read transposed "
                "(nn/tn/nt/tt) and any fused epilogue. Two runs with the same names did the same "
                "GPU work; a changed name means another branch was taken."
            ),
            suggestion=(
                "Compare names between runs (kinetoscope diff A B) before comparing times; an "
                "unexpected dtype (f32 instead of bf16/tf32) or a SIMT kernel where tensor cores "
                "were expected is the first thing to fix."
            ),
            impact_us=0.0,
            evidence=evidence,
            measured={
                "distinct_kernels": len(rows),
                "kernel_time_us": round(total, 3),
                "library_share": {
                    lib: None if share is None else round(share, 4) for lib, share in shares.items()
                },
                "threshold_top": ctx.threshold("top"),
                "median_kernel_us": float(
                    np.median([d for r in rows for d in trace.dur[r.instances]])
                ),
            },
        )
    ]


def _fp32_gemm(trace: Trace, name: str) -> bool:
    """An fp32 GEMM that TF32 would move onto tensor cores: SIMT sgemm/FFMA kernels and
    cuBLASLt's f32 xmma kernels. GEMV is left out: it streams the matrix once, so it is
    memory-bound whatever the math unit."""
    k = decoded(trace, name)
    return k.kind == "gemm" and k.dtype == "f32" and "gemv" not in name.lower()


@rule(
    "fp32-gemm-tf32",
    "kernel-names",
    "fp32 GEMMs on a GPU with TF32 tensor cores",
    min_share=0.10,
)
def fp32_gemm_tf32(ctx) -> list[Finding]:
    """The GPU comes from deviceProperties (Ampere, compute capability 8.0, and newer have
    TF32 tensor cores), never from the kernels' names: cuBLAS runs `volta_sgemm_*` on Turing
    and `ampere_sgemm_*` / `sm80_xmma_*` on Hopper, builds shared between generations."""
    trace = ctx.trace
    arch = gpu_arch(trace)
    if arch is None or not arch.has_tf32_tensor_cores:
        return []
    rows, total = kernel_totals(trace)
    fp32 = [r for r in rows if _fp32_gemm(trace, trace.names[r.name_id])]
    fp32_us = sum(r.device_us for r in fp32)
    share = fp32_us / total if total else 0.0
    min_share = ctx.threshold("min_share")
    if share < min_share:
        return []
    peaks = device_peaks(arch.device)
    fp32_peak = peaks.tflops.get("fp32") if peaks else None
    tf32_peak = peaks.tflops.get("tf32") if peaks else None
    steps = max(len(trace.steps), 1)
    if fp32_peak and tf32_peak:
        ratio = tf32_peak / fp32_peak
        saved = fp32_us * (1 - 1 / ratio)
        gain = (
            f"{peaks.device} peaks at {tf32_peak:g} TFLOP/s in TF32 against {fp32_peak:g} in "
            f"FP32 ({ratio:.3g}x, {peaks.source}): compute-bound fp32 GEMMs run up to "
            f"{ratio:.3g}x faster, at most {fmt_us(saved / steps)} less GEMM time per step "
            "(GEMMs limited by memory bandwidth gain less)."
        )
    else:
        saved = 0.0
        gain = (
            f"The peak table has no FP32/TF32 figures for {arch.device}, so the gain is not "
            "estimated; on every NVIDIA GPU since Ampere the TF32 tensor rate is several times "
            "the FP32 rate."
        )
    evidence = [Evidence(f"GPU {arch.describe()}")]
    for r in fp32[:3]:
        name = trace.names[r.name_id]
        k = decoded(trace, name)
        built = (
            f"; '{k.arch}' in the name is the kernel's build target, the GPU is {arch.name}"
            if k.arch and not arch.is_target(k.arch)
            else ""
        )
        evidence.append(
            Evidence(
                f"{k.short}: fp32 GEMM, {fmt_us(r.device_us, 1)} in {count(r.calls, 'call')}"
                f"{built}",
                name=name,
                value=r.device_us,
                unit="us",
            )
        )
    return [
        Finding(
            id="fp32-gemm-tf32",
            severity="warn",
            title=(
                f"fp32 GEMMs take {share:.0%} of kernel time on {arch.name} without TF32 "
                f"(threshold {min_share:.0%})"
            ),
            explanation=(
                f"{count(len(fp32), 'fp32 GEMM kernel')} ({fmt_us(fp32_us)}) ran on the FP32 "
                f"units (SIMT sgemm/FFMA or f32 xmma). The GPU is {arch.describe()}, which has "
                "TF32 tensor cores; PyTorch leaves TF32 off for matmuls by default. " + gain
            ),
            suggestion=(
                "torch.backends.cuda.matmul.allow_tf32 = True (or "
                'torch.set_float32_matmul_precision("high")): fp32 inputs and outputs, the '
                "products rounded to a 10-bit mantissa; or train in bf16 with autocast, which "
                "also halves the memory traffic. `kinetoscope tune` tries the tf32 knob."
            ),
            impact_us=saved / steps,
            evidence=evidence,
            measured={
                "gpu_arch": arch.name,
                "compute_capability": arch.compute_capability,
                "fp32_gemm_us": round(fp32_us, 3),
                "fp32_gemm_share": round(share, 4),
                "threshold_min_share": min_share,
                "tf32_over_fp32_peak": round(tf32_peak / fp32_peak, 3)
                if fp32_peak and tf32_peak
                else None,
            },
        )
    ]
