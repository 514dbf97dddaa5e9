"""`explain DIR --format html`: the multi-rank page, with the timelines of two ranks.

The ranks table says who is slow; two timelines, one above the other on one time
scale, show why: the straggler and the rank that waits longest for it at the
collectives (the pair the straggler text describes), or, without a straggler,
the ranks with the slowest and the fastest median step. The workers send back
only small summaries (multirank.py), so the two traces are loaded and explained
again here, in this process, for their events and their findings' evidence: the
page costs two `explain` runs more than the text report.
"""

from __future__ import annotations

from ..api import explain
from ..formatting.units import fmt_us
from ..pipeline.timeline_sides import timeline_side
from ..report.html import render_ranks_html
from ..trace import load
from .report import MultiRankReport


def shown_ranks(report: MultiRankReport) -> list[tuple[int, str]]:
    """(rank, why it is shown), at most two, the one to look at first on top."""
    ranks = report.ranks
    if report.stragglers:
        slow = report.stragglers[0]
        waits = {r: w for r, w in report.waits.items() if r != slow}
        shown = [(slow, "straggler")]
        if waits:
            longest = max(waits, key=waits.get)
            shown.append((longest, f"waits longest at collectives, {fmt_us(waits[longest])}"))
        return shown
    by_step = sorted(ranks, key=lambda r: ranks[r].step_us)
    slowest, fastest = by_step[-1], by_step[0]
    shown = [(slowest, f"slowest median step, {fmt_us(ranks[slowest].step_us)}")]
    if fastest != slowest:
        shown.append((fastest, f"fastest median step, {fmt_us(ranks[fastest].step_us)}"))
    return shown


def render_ranks_page(report: MultiRankReport, config: dict | None) -> str:
    """The shared page (report/html.py) with the `shown_ranks` timelines under the table."""
    sides = []
    for rank, why in shown_ranks(report):
        trace = load(report.ranks[rank].path)
        explained = explain(trace, config)
        sides.append(
            timeline_side(
                f"r{rank}",
                f"rank {rank} ({why})",
                f"rank {rank}",
                trace,
                explained.findings,
                explained.timeline.steps,
                bool(trace.steps),
            )
        )
    llm = None
    if report.llm_passes:  # the lined-up passes text, Markdown and JSON show
        head, rows = report.llm_table
        llm = {"notes": report.llm_notes, "head": head, "rows": rows}
    return render_ranks_html(report, sides, llm)
