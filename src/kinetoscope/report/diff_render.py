"""Renderers for a `compare.diff_model.TraceDiff`: text (terminal), Markdown, JSON and a
self-contained HTML page.

Text, Markdown and HTML lay out the same sections (report/diff_sections.py), the
tables through `report.tables` (rich for text, one escaped Markdown table); they
compute nothing. JSON is the diff's own dictionary.
"""

from __future__ import annotations

import io

from ..formatting.jsontext import dumps
from .diff_sections import RUNS_TITLE, more_line, sections
from .tables import markdown_table, md_cell, text_table


def to_text(d, width: int = 100) -> str:
    from rich.console import Console

    buf = io.StringIO()
    console = Console(file=buf, width=width, force_terminal=False, highlight=False)
    for sec in sections(d):
        console.rule(sec.title, align="left")
        for line in sec.text:
            console.print(line, markup=False)
        if sec.headers:
            console.print(text_table(sec.headers, sec.rows))
        if sec.more:
            console.print(more_line(sec), markup=False)
        console.print()
    return buf.getvalue()


def to_markdown(d) -> str:
    out = ["# kinetoscope diff", ""]
    for sec in sections(d):
        out += [f"## {sec.title}", ""]
        out += [md_cell(line) + "\n" for line in sec.text]  # names from the traces: literal
        if sec.headers:
            out += [*markdown_table(sec.headers, sec.rows), ""]
        if sec.more:
            out += [more_line(sec), ""]
    return "\n".join(out)


def to_json(d) -> str:
    return dumps(d.document(), indent=2)


def to_html(d, sides=()) -> str:
    """One self-contained page on the shared report stylesheet and scripts (report/html.py);
    given the two runs' timeline sides (`pipeline.timeline_sides.diff_sides`), it also draws
    each run's timeline after the runs table."""
    from .html import render_diff_html

    secs = sections(d)
    after = next(i for i, s in enumerate(secs) if s.title == RUNS_TITLE)
    return render_diff_html(d, secs, more_line, sides, timelines_after=after)


RENDERERS = {"text": to_text, "md": to_markdown, "json": to_json, "html": to_html}
