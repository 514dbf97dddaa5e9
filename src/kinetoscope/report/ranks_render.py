"""The multi-rank report (ranks/report.py's `MultiRankReport`) as text or Markdown.

The ranks table and the LLM passes lined up across ranks are `report.tables`
tables (rich for text, the escaped Markdown table), at their natural width: a
report that never wraps a cell. The figures, the straggler sentence and the JSON
come from the report object; this module only lays them out.
"""

from __future__ import annotations

from typing import Any

from ..formatting.escaping import inert
from ..formatting.units import fmt_us, rank_ranges
from .tables import markdown_table, md_cell, md_code, table_text, text_table

#: the columns of the ranks table, after the rank itself
RANK_COLUMNS = ["steps", "step", "busy", "compute", "coll.", "coll. share", "coll. wait",
                "overlap", "exposed"]  # fmt: skip


def render(report, markdown: bool) -> str:
    """`explain DIR` as text, or as Markdown when `markdown`."""
    rows = []
    for r, s in report.ranks.items():
        rows.append(
            [
                str(r) + (" *" if r in report.stragglers else ""),
                str(len(s.steps)) if s.steps else "-",
                fmt_us(s.step_us),
                fmt_us(s.device_busy_us),
                fmt_us(s.compute_us),
                fmt_us(s.collective_us),
                f"{s.collective_share:.1%}",
                fmt_us(report.waits[r]) if report.matched else "-",
                f"{s.overlap:.1%}" if s.overlap is not None else "-",
                fmt_us(s.exposed_us),
            ]
        )
    h = "## " if markdown else ""
    lines = [f"{h}{len(report.ranks)} ranks, median step {fmt_us(report.median_step)}", ""]
    lines += _table(["rank", *RANK_COLUMNS], rows, 1, markdown)
    lines += ["", f"{h}Files" if markdown else "files:"]
    # a file name prints as text: its control characters never act on the terminal
    lines += [
        f"- rank {r}: {md_code(s.path)}" if markdown else f"  rank {r}: {inert(s.path)}"
        for r, s in report.ranks.items()
    ]
    lines += [
        "",
        "step: median over the rank's steps (the window without steps); "
        "coll.: collective kernels (NCCL/RCCL, DeepEP, NVSHMEM, custom all-reduce); coll. "
        "share: of device busy time; coll. wait: time in collectives waiting for the last "
        "rank; overlap: share of collective time during which compute kernels ran on other "
        "streams; exposed: communication per step (median) with no compute beside it; "
        "*: straggler",
        "",
        report.straggler_text(),
        "",
        *(skew_lines(report, markdown) if report.collective_skew else []),
        *(passes_lines(report, markdown) if report.llm_passes else []),
        f"{h}Findings (merged across ranks)",
    ]
    lines += [_finding(f, markdown) for f in report.findings]
    if not report.findings:
        lines.append("  none")
    return "\n".join(lines)


def _finding(f: dict[str, Any], markdown: bool) -> str:
    """One merged finding: which ranks, its severity and title, where it is worst."""
    impact = f["impact_us"]
    span = f"{fmt_us(impact['min'])}-{fmt_us(impact['max'])}/step" if impact["max"] > 0 else "info"
    line = (
        f"rank{'s' if len(f['ranks']) > 1 else ''} {rank_ranges(f['ranks'])}: "
        f"[{f['severity']}] {f['id']}: {f['title']} (worst on rank {f['worst_rank']}; {span})"
    )
    return f"- {md_cell(line)}" if markdown else f"  {inert(line)}"


def skew_lines(report, markdown: bool) -> list[str]:
    """Each collective compared across ranks (ranks/skew.py): a heading, the table of the
    calls compared, then the sentences (matching, meaning, clocks, the widest call)."""
    h = "## " if markdown else ""
    head, rows = report.skew_table
    lines = [f"{h}Collectives across ranks", ""]
    if rows:
        lines += _table(head, rows, 2, markdown) + [""]
    notes = report.skew_notes
    lines += [f"- {md_cell(n)}" for n in notes] if markdown else [inert(n) for n in notes]
    return lines + [""]


def passes_lines(report, markdown: bool) -> list[str]:
    """The LLM passes lined up across ranks (ranks/llm.py): a heading, the notes and the
    per-pass table."""
    h = "## " if markdown else ""
    lines = [f"{h}LLM passes across ranks", "", *report.llm_notes, ""]
    head, rows = report.llm_table
    return lines + _table(head, rows, 2, markdown) + [""]


def _table(head: list[str], rows: list[list[str]], left: int, markdown: bool) -> list[str]:
    """The first `left` columns text, the rest numbers; Markdown or rich text lines."""
    if markdown:
        return markdown_table(head, rows, left)
    return table_text(text_table(head, rows, left)).splitlines()
