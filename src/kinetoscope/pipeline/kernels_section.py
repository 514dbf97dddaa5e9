"""The report's `kernels` section as plain data (analysis.kernel_view): documented in
docs/report-schema.md, laid out by report/kernels_render.py and the HTML partial."""

from __future__ import annotations

from typing import Any

from ..analysis.kernel_view import kernel_view
from ..trace import Trace

#: kernels listed by name, heaviest first; the summary figures cover them all
MAX_ROWS = 50
ESTIMATE_NOTE = (
    "Tensor Core use is read from kernel-name families (an estimate: the trace records no "
    "instruction mix); occupancy is Kineto's estimated achieved occupancy where it computed "
    "one, the CUDA occupancy calculator's arithmetic here where it did not"
)


def _share(part: float, whole: float) -> float | None:
    return part / whole if whole > 0 else None


def kernels_section(trace: Trace) -> dict[str, Any]:
    """Per kernel name and over all kernels; {} without kernels."""
    view = trace.memo(kernel_view)
    if view is None:
        return {}
    return {
        "device": view.device,
        "kernel_time_us": view.total_us,
        "distinct_kernels": len(view.rows),
        "tensor_core_us": view.tensor_core_us,
        "tensor_core_share": _share(view.tensor_core_us, view.total_us),
        "tensor_core_unknown_share": _share(view.unknown_us, view.total_us),
        "tf32_capable": view.tf32_capable,
        "fp32_without_tf32_us": view.fp32_no_tf32_us if view.tf32_capable else None,
        "fp32_without_tf32_share": (
            _share(view.fp32_no_tf32_us, view.total_us) if view.tf32_capable else None
        ),
        "est_achieved_occupancy": view.est_achieved_occupancy,
        "occupancy_covered_share": _share(view.occupancy_covered_us, view.total_us),
        "occupancy_recomputed_calls": view.recomputed_calls,
        "estimate_note": ESTIMATE_NOTE,
        "notes": view.notes,
        "kernels": [
            {
                "name": r.name,
                "raw_name": r.raw,
                "calls": r.calls,
                "total_us": r.total_us,
                "share": _share(r.total_us, view.total_us),
                "grid": list(r.grid) if r.grid else None,
                "block": list(r.block) if r.block else None,
                "registers_per_thread": r.registers,
                "shared_memory_bytes": r.shared_memory,
                "blocks_per_sm": r.blocks_per_sm,
                "warps_per_sm": r.warps_per_sm,
                "launch_configs": r.configs,
                "est_achieved_occupancy": r.est_achieved_occupancy,
                "theoretical_occupancy": r.theoretical_occupancy,
                "occupancy_limiters": list(r.limiters),
                "occupancy_limiter_note": r.limiter_note,
                "tensor_cores": r.tensor_cores,
                "tensor_core_family": r.tensor_core_family,
                "fp32_without_tf32": r.fp32_without_tf32 and view.tf32_capable,
            }
            for r in view.rows[:MAX_ROWS]
        ],
    }
