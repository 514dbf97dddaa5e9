"""The MoE comparison of a diff: each part's time per step in both runs, dispatch, loads.

Two runs of one MoE model (another routing kernel, expert parallelism on or off, a
fused MoE against the eager loop) differ part by part: the expert GEMMs can speed up
while dispatch/combine grows. Runs may hold different step counts, so each part is
compared per step (its total over the window's steps; the whole window counts as one
step without ProfilerStep). Empty when neither run shows an MoE.
"""

from __future__ import annotations

from typing import Any

from ..analysis.moe import MoeView, moe_view
from ..analysis.moe_names import PARTS
from ..trace import Trace


def _steps(trace: Trace) -> int:
    return max(len(trace.steps), 1)


def moe_diff(trace_a: Trace, trace_b: Trace) -> dict[str, Any]:
    """Both runs' MoE parts side by side (JSON-ready); {} when neither has one."""
    va, vb = trace_a.memo(moe_view), trace_b.memo(moe_view)
    if va is None and vb is None:
        return {}
    sides = ((va, _steps(trace_a)), (vb, _steps(trace_b)))
    parts = []
    for name in PARTS:
        row: dict[str, Any] = {"part": name}
        for key, (view, steps) in zip(("a", "b"), sides, strict=True):
            p = next((p for p in view.parts if p.part == name), None) if view else None
            row[key] = (
                {
                    "kernels": p.kernels,
                    "device_per_step_us": p.device_us / steps if p.kernels else None,
                    "ops": p.ops,
                    "host_per_step_us": p.host_us / steps if p.ops else None,
                }
                if p
                else None
            )
        if row["a"] or row["b"]:
            parts.append(row)
    return {"a": _side(va), "b": _side(vb), "parts": parts}


def _side(view: MoeView | None) -> dict[str, Any] | None:
    if view is None:
        return None
    sparse = [layer.imbalance for layer in view.layers if layer.imbalance is not None]
    return {
        "dispatch": view.dispatch,
        "fused": view.fused,
        "layers": len(view.layers),
        "max_imbalance": max(sparse) if sparse else None,
    }
