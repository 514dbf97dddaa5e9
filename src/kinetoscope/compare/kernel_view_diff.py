"""The kernel view of a diff: Tensor Core share and estimated occupancy before and after,
over all kernels and per kernel name present in both runs.

A change of precision or library shows here first: bf16 autocast moves GEMM time onto
Tensor Cores (the share rises), a new tile choice changes registers and with them the
occupancy. Kernels are matched by their exact recorded name: a different name is
different GPU work, which the kernel table of the diff lists as new or gone.
"""

from __future__ import annotations

from typing import Any

from ..analysis.kernel_view import KernelView, kernel_view
from ..trace import Trace

#: matched kernels listed, heaviest (in either run) first
MAX_KERNELS = 30


def _side(view: KernelView | None) -> dict[str, Any] | None:
    if view is None:
        return None
    total = view.total_us
    return {
        "device": view.device,
        "kernel_time_us": total,
        "tensor_core_share": view.tensor_core_us / total if total > 0 else None,
        "est_achieved_occupancy": view.est_achieved_occupancy,
        "fp32_without_tf32_us": view.fp32_no_tf32_us if view.tf32_capable else None,
    }


def kernel_view_diff(trace_a: Trace, trace_b: Trace) -> dict[str, Any]:
    """Both runs' kernel-view figures and the kernels they share (JSON-ready); {} when
    neither run has kernels."""
    va, vb = trace_a.memo(kernel_view), trace_b.memo(kernel_view)
    if va is None and vb is None:
        return {}
    rows_b = {r.raw: r for r in vb.rows} if vb else {}
    shared = [(ra, rows_b[ra.raw]) for ra in (va.rows if va else []) if ra.raw in rows_b]
    shared.sort(key=lambda p: -max(p[0].total_us, p[1].total_us))
    return {
        "a": _side(va),
        "b": _side(vb),
        "matched_kernels": len(shared),
        "kernels": [
            {
                "name": ra.name,
                "raw_name": ra.raw,
                "total_us": {"a": ra.total_us, "b": rb.total_us},
                "calls": {"a": ra.calls, "b": rb.calls},
                "est_achieved_occupancy": {
                    "a": ra.est_achieved_occupancy,
                    "b": rb.est_achieved_occupancy,
                },
                "registers_per_thread": {"a": ra.registers, "b": rb.registers},
                "tensor_cores": ra.tensor_cores,
                "tensor_core_family": ra.tensor_core_family,
            }
            for ra, rb in shared[:MAX_KERNELS]
        ],
    }
