"""The modules section's lines and rows, shared by the text and Markdown reports.

`Report.modules` (pipeline/modules_section.py) holds a forward and a backward tree of
module paths. The text and Markdown reports show each as an indented tree: children
heaviest first, at most `MAX_CHILDREN` under a node and `MAX_ROWS` rows per direction
(the JSON and HTML keep every module). `*` marks the heaviest path. Cells are plain
strings; each renderer escapes trace-provided text (module names) its own way.
"""

from __future__ import annotations

from typing import Any

from ..formatting.units import fmt_us

COLUMNS = ("module", "calls", "host", "device", "kernels")
#: rows per direction before the tree is cut
MAX_ROWS = 24
#: children listed under one node before the rest are counted
MAX_CHILDREN = 8
WORDS = {"device_us": "device time", "host_us": "host time"}


def summary(modules: dict[str, Any]) -> list[str]:
    """The heaviest path of each direction, what it follows, and what backward misses."""
    measure = modules["measure"]
    lines = []
    for kind in ("forward", "backward"):
        top = modules["heaviest"][kind]
        if top:
            lines.append(
                f"Heaviest {kind} path by {WORDS[measure]}: {' > '.join(top['path'])}"
                f" ({fmt_us(top[measure])}, {top['calls']} call(s))."
            )
    if not modules["backward"]:
        lines.append(modules["backward_note"] or "No backward ran in the trace's modules.")
    elif modules["backward_note"]:
        lost = fmt_us(modules["backward_unattributed_us"])
        lines.append(f"{modules['backward_note']} ({lost} of host time).")
    lines.append(
        "Times are summed over every call in the trace; device time is the kernels "
        "launched under the module; backward calls count autograd nodes."
    )
    return lines


def rows(modules: dict[str, Any], kind: str) -> list[tuple[int, list[str]]]:
    """(depth, cells) of the tree cut to `MAX_ROWS`, children heaviest first; a row of
    `...` cells says how many were left out under a node."""
    measure = modules["measure"]
    out: list[tuple[int, list[str]]] = []
    # an explicit stack (no recursion on deep trees), children pushed in reverse so
    # the heaviest comes off first
    pending = _level(modules[kind], 0, measure)[::-1]
    while pending and len(out) < MAX_ROWS:
        depth, item = pending.pop()
        if isinstance(item, int):
            out.append((depth, [f"... {item} more", "", "", "", ""]))
            continue
        out.append((depth, cells(item)))
        pending += _level(item["children"], depth + 1, measure)[::-1]
    left = sum(_count(item) for _, item in pending)
    if left:
        out.append((0, [f"... {left} more module(s) (see --format json or html)", "", "", "", ""]))
    return out


def _level(nodes: list[dict[str, Any]], depth: int, measure: str) -> list:
    ranked = sorted(nodes, key=lambda n: -n[measure])
    shown: list = [(depth, n) for n in ranked[:MAX_CHILDREN]]
    if len(ranked) > MAX_CHILDREN:
        shown.append((depth, sum(_count(n) for n in ranked[MAX_CHILDREN:])))
    return shown


def _count(item: dict[str, Any] | int) -> int:
    if isinstance(item, int):
        return item
    return 1 + sum(_count(c) for c in item["children"])


def cells(node: dict[str, Any]) -> list[str]:
    mark = " *" if node["heaviest"] else ""
    device = fmt_us(node["device_us"]) if node["kernels"] else "-"
    return [
        node["name"] + mark,
        str(node["calls"]),
        fmt_us(node["host_us"]),
        device,
        str(node["kernels"]),
    ]


def text_group(modules: dict[str, Any]):
    """The text report's section: the hint alone, or the summary and one indented
    table per direction."""
    from rich.console import Group
    from rich.table import Table
    from rich.text import Text

    from .console import inert

    parts: list = [Text("Modules", style="bold")]
    if "hint" in modules:
        parts.append(Text(inert(modules["hint"]), style="dim"))
        return Group(*parts)
    parts += [Text(inert(line), style="dim") for line in summary(modules)]
    for kind in ("forward", "backward"):
        if not modules[kind]:
            continue
        table = Table(box=None, pad_edge=False, header_style="dim", padding=(0, 1))
        for k, name in enumerate(COLUMNS):
            label = f"{name} ({kind})" if k == 0 else name
            table.add_column(label, justify="left" if k == 0 else "right", overflow="fold")
        for depth, row in rows(modules, kind):
            table.add_row(Text("  " * depth + inert(row[0])), *row[1:])
        parts.append(table)
    return Group(*parts)


def markdown_lines(modules: dict[str, Any]) -> list[str]:
    """The Markdown report's section: the hint alone, or the summary and a nested list
    per direction (a table cannot indent)."""
    from .tables import md_cell

    out = ["## Modules", ""]
    if "hint" in modules:
        return out + [md_cell(modules["hint"]), ""]
    for line in summary(modules):
        out += [md_cell(line), ""]
    for kind in ("forward", "backward"):
        if not modules[kind]:
            continue
        out += [f"**{kind.capitalize()}** (calls, host, device, kernels; `*` heaviest path):", ""]
        for depth, row in rows(modules, kind):
            name, rest = md_cell(row[0]), row[1:]
            detail = (
                f" - {rest[0]} call(s), host {rest[1]}, device {rest[2]}, {rest[3]} kernel(s)"
                if rest[0]
                else ""
            )
            out.append("  " * depth + f"- {name}" + detail)
        out.append("")
    return out
