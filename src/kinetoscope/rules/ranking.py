"""The order findings are read in: what to look at first.

The header of every report says findings are ranked by the time a fix could save, so
that is the order: the estimated saving per step (`impact_us`, already bounded by the
window account in `rules.merge.fit_savings`) decides, largest first. Severity only
breaks ties, then the id, so the order is stable across runs. One exception, from what
the findings mean: a finding that says the window is not a steady state (a window
caveat such as `compilation-in-window`, or the verdicts `not-judged`, `cold-window`,
`compile-window`) says the other numbers describe something else, and is read first
whatever its saving.
"""

from __future__ import annotations

from collections.abc import Iterable

from .base import SEVERITY_ORDER, Finding

#: findings that say the window is not a steady state: read before anything else
WINDOW_CAVEATS = frozenset({"compilation-in-window", "not-judged", "cold-window", "compile-window"})


def rank(findings: Iterable[Finding]) -> list[Finding]:
    """`findings` in reading order: window caveats, then the largest saving per step
    (ties by severity, then id)."""

    def key(f: Finding):
        return (f.id not in WINDOW_CAVEATS, -f.impact_us, SEVERITY_ORDER[f.severity], f.id)

    return sorted(findings, key=key)
