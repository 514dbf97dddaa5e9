"""The report's `modules` section as plain data (analysis.modules): documented in
docs/report-schema.md, laid out by report/modules_render.py and the HTML partial."""

from __future__ import annotations

from typing import Any

from ..analysis.modules import HINT, ModuleNode, module_view
from ..trace import Trace


def modules_section(trace: Trace) -> dict[str, Any]:
    """The forward and backward module trees, or only `hint` where the trace has no
    module ranges (nothing is guessed from op names)."""
    view = trace.memo(module_view)
    if view is None:
        return {"hint": HINT}
    return {
        "measure": view.measure,
        "forward": [node_dict(n) for n in view.forward],
        "backward": [node_dict(n) for n in view.backward],
        "heaviest": {
            "forward": _heaviest(view.forward, view.measure),
            "backward": _heaviest(view.backward, view.measure),
        },
        "backward_note": view.backward_note,
        "backward_unattributed": view.backward_unattributed,
        "backward_unattributed_us": view.backward_unattributed_us,
    }


def _heaviest(roots: list[ModuleNode], measure: str) -> dict[str, Any] | None:
    """The marked path as names, with its last module's time and calls."""
    path, level = [], roots
    while level:
        top = next((n for n in level if n.heaviest), None)
        if top is None:
            break
        path.append(top)
        level = top.children
    if not path:
        return None
    return {
        "path": [n.name for n in path],
        measure: getattr(path[-1], measure),
        "calls": path[-1].calls,
    }


def node_dict(node: ModuleNode) -> dict[str, Any]:
    return {
        "name": node.name,
        "path": node.path,
        "kind": node.kind,
        "calls": node.calls,
        "host_us": node.host_us,
        "device_us": node.device_us,
        "kernels": node.kernels,
        "heaviest": node.heaviest,
        "children": [node_dict(c) for c in node.children],
    }
