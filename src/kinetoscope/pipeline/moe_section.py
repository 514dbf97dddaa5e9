"""The report's `moe` section as plain data (analysis.moe): documented in
docs/report-schema.md, laid out by report/moe_render.py and the HTML partial."""

from __future__ import annotations

from typing import Any

from ..analysis.moe import moe_view
from ..trace import Trace

#: What a fused MoE kernel keeps from the trace.
FUSED_NOTE = (
    "fused MoE kernels route, permute and run every expert inside a few launches: the "
    "trace shows their time but not how many tokens each expert got"
)


def _share(part: float, whole: float) -> float | None:
    return part / whole if whole > 0 else None


def moe_section(trace: Trace) -> dict[str, Any]:
    """Routing, permutation, expert GEMMs and dispatch/combine with their shares, dense or
    sparse dispatch with its evidence, per-layer expert loads; {} without MoE."""
    view = trace.memo(moe_view)
    if view is None:
        return {}
    sparse = [layer for layer in view.layers if layer.imbalance is not None]
    worst = max(sparse, key=lambda layer: layer.imbalance, default=None)
    return {
        "dispatch": view.dispatch,
        "dispatch_evidence": view.dispatch_evidence,
        "fused": view.fused,
        "note": FUSED_NOTE if view.fused else None,
        "scope_ops": view.scope_ops,
        "device_total_us": view.device_total_us,
        "window_us": view.window_us,
        "parts": [
            {
                "part": p.part,
                "kernels": p.kernels,
                "device_us": p.device_us,
                "device_share": _share(p.device_us, view.device_total_us),
                "ops": p.ops,
                "host_us": p.host_us,
                "host_share": _share(p.host_us, view.window_us),
                "names": [{"name": n, "us": us} for n, us in p.names],
            }
            for p in view.parts
        ],
        "imbalance": (
            {
                "max": worst.imbalance,
                "loads": list(worst.loads),
                "start_us": trace.rel(worst.start),
                "layers": len(sparse),
            }
            if worst is not None
            else None
        ),
        "layers": [
            {
                "start_us": trace.rel(layer.start),
                "dispatch": layer.dispatch,
                "tokens": layer.tokens,
                "experts": layer.experts,
                "top_k": layer.top_k,
                "hidden": layer.hidden,
                "expert_rows": list(layer.rows),
                "loads": list(layer.loads) if layer.dispatch == "sparse" else None,
                "imbalance": layer.imbalance,
            }
            for layer in view.layers
        ],
    }
