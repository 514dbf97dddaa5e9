"""The communication section's lines and cells, shared by the text and Markdown reports
(the HTML partial lays out the same fields of `Report.communication`).

One line per family (calls, time, and for device families how much of it ran under
compute), then one row per family and collective kind: calls, total, the spread of
durations (median, p90, min, max), skew (max over median across calls and across
steps), bytes where the trace records them, algorithm and bus bandwidth (nccl-tests'
definitions, GB/s = 1e9 bytes/s). Cells are plain strings; renderers escape.
"""

from __future__ import annotations

from typing import Any

from ..formatting.units import count, fmt_bytes, fmt_us

COLUMNS = (
    "family",
    "collective",
    "calls",
    "total",
    "median",
    "p90",
    "min",
    "max",
    "skew",
    "step skew",
    "bytes",
    "algbw",
    "busbw",
)

NOTE = (
    "skew: max over median of the calls' durations; step skew: of this collective's time "
    "per step. algbw: bytes / duration; busbw: algbw x 2(n-1)/n (all-reduce), x (n-1)/n "
    "(all-gather, reduce-scatter, all-to-all), x 1 (broadcast, reduce, send/recv), n the "
    "recorded group size (nccl-tests). A collective kernel waits for its peers, so one "
    "rank's durations include that wait: its bandwidth is a lower bound."
)


def family_lines(comm: dict[str, Any]) -> list[str]:
    lines = []
    for f in comm["families"]:
        line = f"{f['family']}: {count(f['calls'], 'call')}, {fmt_us(f['total_us'])}"
        if f["hidden_us"] is None:
            line += " on the CPU"
        elif f["busy_us"] > 0:
            line += (
                f", {f['hidden_us'] / f['busy_us']:.0%} hidden under compute, "
                f"{fmt_us(f['exposed_us'])} exposed"
            )
        lines.append(line)
    return lines


def _ratio(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f}x"


def _gbps(value: float | None) -> str:
    return "-" if value is None else f"{value:.3g} GB/s"


def bytes_cell(row: dict[str, Any]) -> str:
    """Recorded bytes per call (median call's share is not recorded apart: the mean), or
    why there is no bandwidth."""
    if not row["calls_with_bytes"]:
        return "not recorded"
    per_call = fmt_bytes(row["bytes"] / row["calls_with_bytes"])
    part = "" if row["calls_with_bytes"] == row["calls"] else f" ({row['calls_with_bytes']} calls)"
    return f"{per_call}/call{part}"


def busbw_cell(row: dict[str, Any]) -> str:
    if row["busbw_gbps"] is not None:
        return _gbps(row["busbw_gbps"])
    if row["algbw_gbps"] is not None and not row["ranks"]:
        return "group size not recorded"
    return "-"


def row_cells(row: dict[str, Any]) -> list[str]:
    """One collective's cells, the family first (unescaped, for the renderer to escape)."""
    return [
        row["family"],
        row["kind"],
        str(row["calls"]),
        fmt_us(row["total_us"]),
        fmt_us(row["median_us"]),
        fmt_us(row["p90_us"]),
        fmt_us(row["min_us"]),
        fmt_us(row["max_us"]),
        _ratio(row["skew"]),
        _ratio(row["step_skew"]),
        bytes_cell(row),
        _gbps(row["algbw_gbps"]),
        busbw_cell(row),
    ]


def row_line(row: dict[str, Any]) -> str:
    """One collective as a sentence, for the 100-column terminal (the table's cells)."""
    c = row_cells(row)
    step = f", step skew {c[9]}" if row["step_skew"] is not None else ""
    bandwidth = ""
    if row["algbw_gbps"] is not None:
        bandwidth = f", algbw {c[11]}, busbw {c[12]}"
    return (
        f"{c[0]} {c[1]}: {count(row['calls'], 'call')}, {c[3]}; median {c[4]}, p90 {c[5]}, "
        f"min {c[6]}, max {c[7]} (skew {c[8]}{step}); bytes {c[10]}{bandwidth}"
    )
