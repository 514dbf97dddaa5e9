"""The one table helper every renderer uses: text tables on `rich`, Markdown tables
through one escaper.

Why one: four hand-written writers had drifted apart (one did not escape `|`, so a
kernel name holding one split its row). Every cell that can hold a string from a
trace goes through `md_cell` here, or `rich.text.Text` (never markup) in text.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from ..formatting.escaping import inert

_SPECIAL = re.compile(r"([\\`*_\[\]<>|&~])")
_BREAKS = re.compile(r"\s*[\r\n]+\s*")


def md_cell(text: str) -> str:
    """`text` as literal Markdown on one line: every character Markdown or HTML
    would interpret is backslash-escaped (`|` included, so it stays in its cell),
    control characters shown as `\\xNN`."""
    return _SPECIAL.sub(r"\\\1", inert(_BREAKS.sub(" ", text)))


def md_code(text: str) -> str:
    """`text` as a code span on one line: fenced by more backticks than it holds
    (backslashes do not escape inside code spans); `|` escaped for table cells."""
    text = inert(_BREAKS.sub(" ", text)).replace("|", "\\|")
    fence = "`" * (max(map(len, re.findall("`+", text)), default=0) + 1)
    pad = " " if text.startswith("`") or text.endswith("`") else ""
    return f"{fence}{pad}{text}{pad}{fence}"


def markdown_table(
    headers: Sequence[str], rows: Sequence[Sequence[str]], left: int | None = None
) -> list[str]:
    """A Markdown table, one line per row: the first `left` columns are text
    (left-aligned), the rest numbers (right-aligned); all left-aligned when `left`
    is None. Headers and cells are escaped with `md_cell`."""
    left = len(headers) if left is None else left
    out = ["| " + " | ".join(md_cell(h) for h in headers) + " |"]
    out.append("|" + "|".join("---" if k < left else "---:" for k in range(len(headers))) + "|")
    out += ["| " + " | ".join(md_cell(c) for c in row) + " |" for row in rows]
    return out


def text_table(
    headers: Sequence[str],
    rows: Sequence[Sequence[str]],
    left: int | None = None,
    title: str | None = None,
):
    """A `rich` Table: the first `left` columns left-aligned, the rest right-aligned
    (all left when `left` is None). Cells become `Text`, so nothing in a trace's
    strings is read as rich markup; strings are `inert`-escaped."""
    from rich.table import Table
    from rich.text import Text

    left = len(headers) if left is None else left
    table = Table(title=title, show_edge=False, header_style="bold")
    for k, header in enumerate(headers):
        table.add_column(Text(inert(header)), justify="left" if k < left else "right")
    for row in rows:
        table.add_row(*(Text(inert(c)) for c in row))
    return table


def table_text(table, width: int) -> str:
    """A rich renderable as plain text `width` columns wide, no colour: what a
    piped command prints."""
    from rich.console import Console

    console = Console(width=width, record=True, color_system=None, file=_Null())
    console.print(table)
    return console.export_text()


class _Null:
    """A file that drops what is written (the console only records)."""

    def write(self, _text: str) -> int:
        return len(_text)

    def flush(self) -> None:
        pass
