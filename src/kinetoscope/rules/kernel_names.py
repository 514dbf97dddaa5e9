"""The `kernel-name` rule: what the top kernels' names say (docs/rules.md, "Kernel names")."""

from __future__ import annotations

import numpy as np

from ..analysis.gpu_lane import kernel_totals
from ..analysis.kernel_names import decode
from ..units import count, fmt_us
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
        k = decode(trace.names[row.name_id])
        libraries[k.library] = libraries.get(k.library, 0.0) + row.device_us
    for row in rows[: int(ctx.threshold("top"))]:
        k = decode(trace.names[row.name_id])
        first = int(row.instances[0])
        evidence.append(
            Evidence(
                f"{k.short}: {k.describe()} -- {fmt_us(row.device_us, 1)} in "
                f"{count(row.calls, 'call')} ({row.device_us / total:.0%} of kernel time)",
                name=trace.names[row.name_id],
                ts_us=trace.rel(trace.ts[first]),
                dur_us=float(trace.dur[first]),
                value=row.device_us,
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
                "Compare names between runs (kinetoscope diff A B) before comparing times; an "
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
                "median_kernel_us": float(
                    np.median([d for r in rows for d in trace.dur[r.instances]])
                ),
            },
        )
    ]
