"""The order findings are read in: what to look at first.

Severity comes first, so an `info` never ranks above a `critical` however large
its estimate; inside one severity, the estimated time a fix saves per step
(`impact_us`) decides. Two exceptions, both from what the findings mean:

- A window caveat (`compilation-in-window`) says the other numbers describe a
  one-time event, not the steady state: it is read first within its severity.
- A verdict finding (family `regime`) estimates the whole gap between host and
  device time, of which the specific causes (a data wait, a sync, gaps) are
  parts. Ranked by that total it would always sit above its own causes, so
  within its severity it comes after them: the verdict never hides a cause.
"""

from __future__ import annotations

from collections.abc import Iterable

from .base import SEVERITY_ORDER, Finding, Rule

#: findings that say the window is not a steady state: read before anything else
WINDOW_CAVEATS = frozenset({"compilation-in-window"})
VERDICT_FAMILY = "regime"


def rank(findings: Iterable[Finding], rules: dict[str, Rule]) -> list[Finding]:
    """`findings` in reading order: severity, window caveats, causes before the verdict,
    then the largest impact per step (ties by id, so the order is stable across runs)."""

    def key(f: Finding):
        rule = rules.get(f.id)
        verdict = rule is not None and rule.family == VERDICT_FAMILY
        return (
            SEVERITY_ORDER[f.severity],
            f.id not in WINDOW_CAVEATS,
            verdict,
            -f.impact_us,
            f.id,
        )

    return sorted(findings, key=key)
