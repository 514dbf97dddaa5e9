"""The kernel view's lines and table cells, shared by the text and Markdown reports.

Both lay out `Report.kernels` (pipeline/kernels_section.py): summary lines (Tensor
Core share, fp32 GEMM/conv time without TF32 on a GPU that has it, time-weighted
estimated occupancy, and what the figures rest on), then one row per kernel name.
Cells are plain strings; each renderer escapes trace-provided text its own way.
"""

from __future__ import annotations

from typing import Any

from ..formatting.units import fmt_pct, fmt_us
from .evidence import short_name

COLUMNS = (
    "kernel",
    "calls",
    "total",
    "grid",
    "block",
    "regs",
    "smem",
    "est. occ",
    "limited by",
    "Tensor Cores",
)
#: the terminal's columns: grid and block are left to Markdown, HTML and JSON
TEXT_COLUMNS = tuple(c for c in COLUMNS if c not in ("grid", "block"))
#: rows the text and Markdown tables show (JSON and HTML keep the section's 50)
MAX_ROWS = 15


def _pct(value: float | None) -> str:
    return fmt_pct(value) if value is not None else "-"


def summary(k: dict[str, Any]) -> list[str]:
    lines = [
        f"Device: {k['device'] or 'unknown'}; {k['distinct_kernels']} kernel names, "
        f"{fmt_us(k['kernel_time_us'])} of kernel time.",
        f"Tensor Cores (estimate from kernel names): {_pct(k['tensor_core_share'])} of kernel "
        f"time ({_pct(k['tensor_core_unknown_share'])} undecidable from the name).",
    ]
    if k["tf32_capable"]:
        lines.append(
            f"fp32 GEMM/convolution without TF32: {fmt_us(k['fp32_without_tf32_us'] or 0)} "
            f"({_pct(k['fp32_without_tf32_share'])} of kernel time) on a GPU with TF32 tensor "
            "cores: TF32 or bf16 could have run it there."
        )
    else:
        lines.append(
            "fp32 without TF32: not assessed (the GPU has no TF32 tensor cores or is unknown)."
        )
    lines.append(
        f"Estimated achieved occupancy, weighted by time: {_pct(k['est_achieved_occupancy'])} "
        f"(over {_pct(k['occupancy_covered_share'])} of kernel time)."
    )
    lines += [f"Note: {n}." for n in k["notes"]]
    lines.append(f"Estimates: {k['estimate_note']}.")
    return lines


def _dims(value: list[int] | None) -> str:
    return "x".join(map(str, value)) if value else "-"


def _tc(row: dict[str, Any], full: bool) -> str:
    ran = {True: "yes", False: "no", None: "?"}[row["tensor_cores"]]
    text = f"{ran} ({row['tensor_core_family']})" if full else ran
    return text + ", fp32: TF32/bf16 could" if row["fp32_without_tf32"] else text


def _limit(row: dict[str, Any], full: bool) -> str:
    if full:
        return row["occupancy_limiter_note"] or "-"
    if not row["occupancy_limiters"]:
        return "-"
    return "+".join(row["occupancy_limiters"]) + f" ({_pct(row['theoretical_occupancy'])} max)"


def rows(k: dict[str, Any], full: bool = False) -> list[list[str]]:
    """Cells per kernel; `full` (Markdown) spells out the limiter and the Tensor Core family,
    the terminal's columns get the short form."""
    out = []
    for r in k["kernels"][:MAX_ROWS]:
        smem = r["shared_memory_bytes"]
        out.append(
            [
                short_name(r["name"], 60 if full else 32),
                str(r["calls"]),
                fmt_us(r["total_us"]),
                _dims(r["grid"]),
                _dims(r["block"]),
                str(r["registers_per_thread"]) if r["registers_per_thread"] is not None else "-",
                f"{smem:,}" if smem is not None else "-",
                _pct(r["est_achieved_occupancy"]),
                _limit(r, full),
                _tc(r, full),
            ]
        )
    return out


def text_rows(k: dict[str, Any]) -> list[list[str]]:
    return [row[:3] + row[5:] for row in rows(k)]


def more(k: dict[str, Any]) -> int:
    return max(0, k["distinct_kernels"] - min(MAX_ROWS, len(k["kernels"])))
