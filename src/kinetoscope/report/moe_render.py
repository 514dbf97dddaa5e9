"""The MoE section's lines and table cells, shared by the text and Markdown reports.

Both lay out `Report.moe` (pipeline/moe_section.py): a line saying whether dispatch
is dense or sparse and why, the worst expert load where shapes show loads, one row
per part (routing, permutation, expert GEMMs, dispatch/combine, other work inside
an MoE op) with its device and host time and their shares, and one row per layer
seen in aten ops. Cells are plain strings; each renderer escapes trace-provided
text (kernel names) its own way.
"""

from __future__ import annotations

from typing import Any

from ..formatting.units import fmt_pct, fmt_us
from .evidence import short_name

PART_COLUMNS = (
    "part",
    "largest kernel or op",
    "kernels",
    "device",
    "of kernel time",
    "ops",
    "host",
    "of window",
)
LAYER_COLUMNS = ("layer at", "dispatch", "tokens", "experts", "k", "rows per expert", "max/mean")
#: Layers listed before the table is cut (the JSON and HTML keep them all).
MAX_LAYERS = 12


def summary(moe: dict[str, Any]) -> list[str]:
    """Dispatch and its evidence, the worst load, and what a fused layer hides."""
    dispatch = moe.get("dispatch") or "not determined"
    lines = [f"Dispatch: {dispatch}: {moe['dispatch_evidence']}."]
    worst = moe.get("imbalance")
    if worst:
        loads = ", ".join(map(str, worst["loads"]))
        lines.append(
            f"Expert load imbalance: the busiest expert got {worst['max']:.2f}x the mean "
            f"(tokens per expert {loads}, layer at +{fmt_us(worst['start_us'])}; worst of "
            f"{worst['layers']} sparse layer(s))."
        )
    if moe.get("note"):
        lines.append(f"Not shown: {moe['note']}.")
    if moe.get("scope_ops"):
        lines.append("MoE ops: " + ", ".join(moe["scope_ops"]) + ".")
    return lines


def _share(value: float | None) -> str:
    return fmt_pct(value) if value is not None else "-"


def part_rows(moe: dict[str, Any]) -> list[list[str]]:
    return [
        [
            p["part"],
            short_name(p["names"][0]["name"], 60) if p["names"] else "",
            str(p["kernels"]),
            fmt_us(p["device_us"]) if p["kernels"] else "-",
            _share(p["device_share"]) if p["kernels"] else "-",
            str(p["ops"]),
            fmt_us(p["host_us"]) if p["ops"] else "-",
            _share(p["host_share"]) if p["ops"] else "-",
        ]
        for p in moe["parts"]
    ]


def layer_row(layer: dict[str, Any]) -> list[str]:
    return [
        f"+{fmt_us(layer['start_us'])}",
        layer["dispatch"],
        f"{layer['tokens']:,}",
        str(layer["experts"]),
        str(layer["top_k"]) if layer["top_k"] is not None else "-",
        ", ".join(map(str, layer["expert_rows"])),
        f"{layer['imbalance']:.2f}x" if layer["imbalance"] is not None else "-",
    ]
