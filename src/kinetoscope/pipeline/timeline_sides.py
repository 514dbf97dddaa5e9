"""The timelines of the pages that show several runs: `diff --format html` (the two runs)
and the multi-rank page (two ranks). Each side is one run's timeline payload
(`timeline_data.timeline_events`) with its findings in reading order; `report.html` lays
the sides out and computes nothing.
"""

from __future__ import annotations

from pathlib import PurePath
from typing import Any

from ..rules.base import Finding
from ..trace import Trace
from .timeline_data import timeline_events


def timeline_side(
    key: str,
    caption: str,
    label: str,
    trace: Trace,
    findings: list[Finding],
    steps: list[tuple[str, float, float]],
    per_step: bool,
) -> dict[str, Any]:
    """One trace's timeline (`report.html.timeline_side` draws it): the payload, the
    findings and their reading order; `key` ties the page's finding cards to it."""
    return {
        "key": key,
        "caption": caption,
        "label": label,
        "timeline": timeline_events(trace, findings, steps),
        "findings": findings,
        "per_step": per_step,
    }


def diff_sides(diff, runs) -> list[dict[str, Any]]:
    """The two runs of a diff (`compare.diff.diff_runs(*runs)` gave `diff`), one side each,
    lettered A and B as the diff's tables are."""
    return [
        timeline_side(
            letter.lower(),
            f"{letter}: {PurePath(side.path).name}",
            letter,
            run.trace,
            run.findings,
            run.steps,
            side.has_steps,
        )
        for letter, side, run in zip("AB", (diff.a, diff.b), runs, strict=False)
    ]
