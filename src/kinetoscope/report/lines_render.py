"""The lines section's words and table cells, shared by the text and Markdown reports
and the `lines` command (pipeline/lines_section.py holds the data). Cells are plain
strings; each renderer escapes trace-provided text (file and function names) its own
way."""

from __future__ import annotations

from typing import Any

from ..formatting.units import fmt_pct, fmt_us

#: Column headings, by the section's JSON keys (the device is the CPU's arithmetic on a
#: trace without device work).
HEADINGS = {
    "device": "device",
    "python": "Python",
    "dispatch": "dispatch",
    "waits": "waits",
    "data": "data",
    "one_time": "one-time",
}
#: Lines the text and Markdown reports list (JSON keeps the section's rows).
SHOWN = 10


def classes(lines: dict[str, Any]) -> list[str]:
    """The classes some listed line holds time in (an all-empty column is left out)."""
    return [c for c in lines["columns"] if any(r["us"][c] > 0 for r in lines["rows"])]


def count_columns(lines: dict[str, Any]) -> list[str]:
    return [k for k in ("launches", "syncs", "copies") if any(r[k] for r in lines["rows"])]


#: The counts' short names, in the one column that holds them all.
_SHORT = {"launches": "launch", "syncs": "sync", "copies": "copy"}


def columns(lines: dict[str, Any]) -> tuple[str, ...]:
    """Headings: the count columns share one (`launch/sync`), so the table fits 100
    columns of text."""
    device = "CPU compute" if lines.get("device_is_cpu") else "device"
    heads = [device if c == "device" else HEADINGS[c] for c in classes(lines)]
    counts = "/".join(_SHORT[k] for k in count_columns(lines))
    return ("source line", "calls", "held (share)", *heads, *([counts] if counts else []))


def one_line(lines: dict[str, Any]) -> bool:
    """The section is the hint alone: printed on one line, however narrow the terminal."""
    return not lines.get("has_stacks")


def summary(lines: dict[str, Any]) -> list[str]:
    """What the view counts, in a line or two; the hint alone without stacks."""
    if not lines.get("has_stacks"):
        return [f"Source lines: {lines['hint']}."]
    frames = (
        "the innermost frame of any code"
        if lines.get("all_frames")
        else ("the innermost user frame")
    )
    device = (
        "the CPU's arithmetic where the host ran it"
        if lines.get("device_is_cpu")
        else "device time to the line that launched the work running"
    )
    out = [
        f"Each instant of the {fmt_us(lines['window_us'])} window goes to {frames} open then "
        f"({device}); the profiler records a function's first line for a call it saw begin."
    ]
    left = {c: us for c, us in lines["unattributed_us"].items() if us > 0}
    if left:
        said = ", ".join(f"{HEADINGS[c]} {fmt_us(us)}" for c, us in left.items())
        out.append(f"Held by no user line: {said}.")
    if not lines["rows"]:
        out.append("No user frame holds any of the window (--all-frames shows every frame).")
    return out


def row(r: dict[str, Any], cols: list[str], counts: list[str]) -> list[str]:
    return [
        r["label"],
        str(r["calls"]),
        f"{fmt_us(r['total_us'])} ({fmt_pct(r['share'])})"
        if r["share"] is not None
        else fmt_us(r["total_us"]),
        *(fmt_us(r["us"][c]) if r["us"][c] > 0 else "-" for c in cols),
        *([_counts(r, counts)] if counts else []),
    ]


def _counts(r: dict[str, Any], counts: list[str]) -> str:
    return "/".join(str(r[k]) for k in counts) if any(r[k] for k in counts) else "-"


def rows(lines: dict[str, Any], limit: int = SHOWN) -> list[list[str]]:
    cols, counted = classes(lines), count_columns(lines)
    return [row(r, cols, counted) for r in lines["rows"][:limit]]


def more(lines: dict[str, Any], limit: int = SHOWN) -> int:
    return max(len(lines["rows"]) - limit, 0) + lines.get("more", 0)


def markdown(lines: dict[str, Any], limit: int = SHOWN) -> list[str]:
    """The section in Markdown: heading, summary, table (the hint alone without stacks)."""
    from .tables import markdown_table, md_cell

    if not lines:
        return []
    if not lines.get("has_stacks"):
        return [md_cell(summary(lines)[0]), ""]
    out = ["## Source lines", ""]
    for line in summary(lines):
        out += [md_cell(line), ""]
    if lines.get("has_stacks") and lines["rows"]:
        out += markdown_table(columns(lines), rows(lines, limit), 1) + [""]
        if more(lines, limit):
            out += [f"... {more(lines, limit)} more lines (see --format json).", ""]
    return out


def rich(lines: dict[str, Any], limit: int = SHOWN):
    """The section for the terminal (rich): heading, summary, table."""
    from rich.console import Group
    from rich.table import Table
    from rich.text import Text

    from .console import inert

    if not lines.get("has_stacks"):
        return Text(inert(summary(lines)[0]), style="dim")
    parts: list = [Text("Source lines", style="bold")]
    parts += [Text(inert(line), style="dim") for line in summary(lines)]
    if lines.get("has_stacks") and lines["rows"]:
        table = Table(box=None, pad_edge=False, header_style="dim", padding=(0, 1))
        for k, name in enumerate(columns(lines)):
            if k == 0:
                table.add_column(name, justify="left", overflow="fold", ratio=1, min_width=18)
            else:
                table.add_column(name, justify="right", no_wrap=True)
        for cells in rows(lines, limit):
            table.add_row(*(Text(inert(cell)) for cell in cells))
        parts.append(table)
        if more(lines, limit):
            parts.append(Text(f"... {more(lines, limit)} more lines (see --format json)"))
    return Group(*parts)
