"""The module comparison of a diff: each module path's time per step in both runs.

Module paths are made of the profiler's instance names (`Sequential_0/Head_0/Linear_1`),
which are the same in two runs of one model, so a path is compared with itself: a
layer that got slower, a module that appeared or vanished. Runs may hold different
step counts, so times are per step (totals over the window's steps; the whole trace
counts as one step without ProfilerStep). Empty when neither run has module ranges.
"""

from __future__ import annotations

from typing import Any

from ..analysis.modules import ModuleNode, module_view
from ..trace import Trace


def _steps(trace: Trace) -> int:
    return max(len(trace.steps), 1)


def modules_diff(trace_a: Trace, trace_b: Trace) -> dict[str, Any]:
    """Both runs' module paths side by side, the largest change first (JSON-ready)."""
    va, vb = trace_a.memo(module_view), trace_b.memo(module_view)
    if va is None and vb is None:
        return {}
    flat_a = _flat(va.forward + va.backward) if va else {}
    flat_b = _flat(vb.forward + vb.backward) if vb else {}
    measure = (
        "device_us"
        if "device_us" in (getattr(va, "measure", ""), getattr(vb, "measure", ""))
        else "host_us"
    )
    steps_a, steps_b = _steps(trace_a), _steps(trace_b)
    rows = []
    for key in sorted(set(flat_a) | set(flat_b)):
        a, b = flat_a.get(key), flat_b.get(key)
        rows.append(
            {"kind": key[0], "path": key[1], "a": _per_step(a, steps_a), "b": _per_step(b, steps_b)}
        )
    per = measure.replace("_us", "_per_step_us")
    rows.sort(key=lambda r: -abs((r["b"] or {}).get(per, 0.0) - (r["a"] or {}).get(per, 0.0)))
    return {
        "measure": measure,
        "a_has_modules": va is not None,
        "b_has_modules": vb is not None,
        "modules": rows,
    }


def _flat(roots: list[ModuleNode]) -> dict[tuple[str, str], ModuleNode]:
    out, stack = {}, list(roots)
    while stack:
        node = stack.pop()
        out[(node.kind, node.path)] = node
        stack += node.children
    return out


def _per_step(node: ModuleNode | None, steps: int) -> dict[str, Any] | None:
    if node is None:
        return None
    return {
        "calls_per_step": node.calls / steps,
        "host_per_step_us": node.host_us / steps,
        "device_per_step_us": node.device_us / steps,
    }
