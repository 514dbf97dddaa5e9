"""The report's `lines` section as plain data (analysis.lines_view): documented in
docs/report-schema.md, laid out by report/lines_render.py and the HTML partial."""

from __future__ import annotations

from typing import Any

from ..analysis.lines_view import COLUMNS, lines_view
from ..analysis.source_lines import RECORD_HINT
from ..trace import Trace

#: Lines the section keeps (ranked); `more` says how many it left out.
MAX_ROWS = 50
#: Lines named per class in `top`.
TOP_PER_CLASS = 3


def lines_section(trace: Trace, all_frames: bool = False, top: int = MAX_ROWS) -> dict[str, Any]:
    """Source lines ranked by the window time they hold, per account class; on a trace
    without Python stacks, only the hint saying how to record them."""
    view = lines_view(trace, all_frames)
    if not view.has_stacks:
        return {"has_stacks": False, "hint": RECORD_HINT, "rows": []}
    window = view.window_us

    def share(us: float) -> float | None:
        return us / window if window > 0 else None

    rows = [
        {
            "label": r.line.label,
            "location": r.line.location,
            "file": r.line.file,
            "line": r.line.line,
            "function": r.line.function,
            "calls": r.calls,
            "total_us": r.total_us,
            "share": share(r.total_us),
            "us": dict(r.us),
            "launches": r.launches,
            "syncs": r.syncs,
            "copies": r.copies,
        }
        for r in view.rows
    ]
    by_class = {
        c: [r["label"] for r in sorted(rows, key=lambda r: -r["us"][c]) if r["us"][c] > 0][
            :TOP_PER_CLASS
        ]
        for c in COLUMNS
    }
    return {
        "has_stacks": True,
        "hint": None,
        "all_frames": view.all_frames,
        "window_us": window,
        "device_is_cpu": view.on_cpu,
        "columns": list(COLUMNS),
        "rows": rows[: max(top, 0)],
        "more": max(len(rows) - max(top, 0), 0),
        "top": by_class,
        "unattributed_us": dict(view.unattributed_us),
    }
