"""Expectations and a baseline checked against one trace: what `check` and `assert_trace` run."""

from __future__ import annotations

import os
from pathlib import Path

from ..api import explain
from ..trace import Trace
from .baseline import load_baseline, parse_percent, regressions
from .expect import Outcome, check_all, parse
from .facts import facts_from_report


def run_check(
    trace: str | os.PathLike | Trace,
    expectations: list[str],
    baseline: str | os.PathLike | None = None,
    max_regression: str = "10%",
) -> list[Outcome]:
    """Outcomes of every expectation, then of the baseline comparison.

    Syntax, the baseline file and the regression limit are checked before the
    trace is read, so a typo fails fast (exit 2).
    """
    for text in expectations:
        parse(text)
    limit = parse_percent(max_regression)
    before = load_baseline(Path(baseline)) if baseline is not None else None
    facts = facts_from_report(explain(trace))
    outcomes = check_all(expectations, facts)
    if before is not None:
        outcomes += regressions(facts, before, limit)
    return outcomes
