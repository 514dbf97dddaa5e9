"""The one table helper every renderer uses: text tables on `rich`, Markdown tables
through one escaper.

Why one: four hand-written writers had drifted apart (one did not escape `|`, so a
kernel name holding one split its row). Every cell that can hold a string from a
trace goes through `md_cell` here, or `rich.text.Text` (never markup) in text.
"""

from __future__ import annotations

import io
import re
from collections.abc import Sequence

from ..formatting.escaping import inert

_SPECIAL = re.compile(r"([\\`*_\[\]<>|&~])")
_SPACES = re.compile(r"\s+")


def _one_line(text: str) -> str:
    """`text` with each run of whitespace that holds a line break made one space.

    Linear: `\\s+` always matches where it starts, and the run is tested in code.
    The regex this replaced, `\\s*[\\r\\n]+\\s*`, scanned a whole run of spaces from
    each of its characters when no break followed (a name then 100k spaces: 99 s)."""
    if "\n" not in text and "\r" not in text:
        return text
    return _SPACES.sub(lambda m: " " if "\n" in m[0] or "\r" in m[0] else m[0], text)


def md_cell(text: str) -> str:
    """`text` as literal Markdown on one line: every character Markdown or HTML
    would interpret is backslash-escaped (`|` included, so it stays in its cell),
    control characters shown as `\\xNN`."""
    return _SPECIAL.sub(r"\\\1", inert(_one_line(text)))


def md_code(text: str) -> str:
    """`text` as a code span on one line: fenced by more backticks than it holds
    (backslashes do not escape inside code spans); `|` escaped for table cells."""
    text = inert(_one_line(text)).replace("|", "\\|")
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
    strings is read as rich markup; strings are `inert`-escaped. A table wider than
    its console folds long cells and headers onto more lines, never cuts them."""
    from rich.table import Table
    from rich.text import Text

    left = len(headers) if left is None else left
    table = Table(title=title, show_edge=False, header_style="bold")
    for k, header in enumerate(headers):
        justify = "left" if k < left else "right"
        table.add_column(Text(inert(header)), justify=justify, overflow="fold")
    for row in rows:
        table.add_row(*(Text(inert(c)) for c in row))
    return table


def fit_table(
    headers: Sequence[str],
    rows: Sequence[Sequence[str]],
    width: int,
    drop_first: Sequence[str],
    title: str | None = None,
):
    """(`text_table`, note): columns named in `drop_first` left out, in that order,
    until the table's natural width fits `width`, so the rest stay whole (never cut
    to `host/st...`); the note names what was left out, or is None."""
    keep = list(range(len(headers)))

    def build():
        return text_table([headers[k] for k in keep], [[r[k] for k in keep] for r in rows],
                          title=title)  # fmt: skip

    table, dropped = build(), []
    for name in drop_first:
        if natural_width(table) <= width:
            break
        if name in headers and headers.index(name) in keep:
            keep.remove(headers.index(name))
            dropped.append(name)
            table = build()
    note = f"left out to fit {width} columns: {', '.join(dropped)}" if dropped else None
    return table, note


def natural_width(table) -> int:
    """Columns a rich renderable takes when nothing bounds it."""
    from rich.console import Console

    return Console(width=10_000, file=io.StringIO()).measure(table).maximum


def table_text(table, width: int | None = None) -> str:
    """A rich renderable as plain text `width` columns wide (its natural width when
    None: a file or report that never wraps a cell), no colour, no trailing blanks:
    what a piped command prints (the console writes into a string it drops and records)."""
    from rich.console import Console

    width = natural_width(table) if width is None else width
    console = Console(width=width, record=True, color_system=None, file=io.StringIO())
    console.print(table)
    return "\n".join(line.rstrip() for line in console.export_text().splitlines())
