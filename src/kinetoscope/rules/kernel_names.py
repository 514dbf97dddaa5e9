"""The `kernel-name` rule: what the top kernels' names say (docs/rules.md, "Kernel names")."""

from __future__ import annotations

import numpy as np

from ..analysis.gpu_lane import device_time_by_name
from ..analysis.kernel_names import decode
from ..units import fmt_us
from .base import Evidence, Finding, rule
from .requires import need_kernels


@rule("kernel-name", "kernel-names", "decode the top kernels' names", top=5)
def kernel_name(ctx) -> list[Finding]:
    trace = ctx.trace
    need_kernels(trace)
    rows = device_time_by_name(trace)
    total = float(trace.dur[trace.kernels].sum())
    evidence = []
    libraries: dict[str, float] = {}
    for nid, device_us, _calls in rows:
        k = decode(trace.names[nid])
        libraries[k.library] = libraries.get(k.library, 0.0) + device_us
    for nid, device_us, calls in rows[: int(ctx.threshold("top"))]:
        k = decode(trace.names[nid])
        inst = trace.kernels[trace.name_id[trace.kernels] == nid]
        first = int(inst[0])
        evidence.append(
            Evidence(
                f"{k.short}: {k.describe()} -- {fmt_us(device_us, 1)} in {calls} call(s) "
                f"({device_us / total:.0%} of kernel time)",
                name=trace.names[nid],
                ts_us=trace.rel(trace.ts[first]),
                dur_us=float(trace.dur[first]),
                value=device_us,
                unit="us",
            )
        )
    split = ", ".join(
        f"{lib} {us / total:.0%}"
        for lib, us in sorted(libraries.items(), key=lambda kv: -kv[1])[:5]
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
                "Compare names between runs (kinetoscope compare) before comparing times; an "
                "unexpected dtype (f32 instead of bf16/tf32) or a SIMT kernel where tensor cores "
                "were expected is the first thing to fix."
            ),
            impact_us=0.0,
            evidence=evidence,
            measured={
                "distinct_kernels": len(rows),
                "kernel_time_us": round(total, 3),
                "library_share": {lib: round(us / total, 4) for lib, us in libraries.items()},
                "threshold_top": ctx.threshold("top"),
                "median_kernel_us": float(np.median(trace.dur[trace.kernels])),
            },
        )
    ]
