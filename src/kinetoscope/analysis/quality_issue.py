"""One reason to doubt a trace's numbers, and the grades they add up to.

Its own module so that the checks living beside the measurements they need (the
capture checks of `analysis.account.capture`, which read the window account) and the
grade itself (`analysis.quality`) share one type without importing each other.
"""

from __future__ import annotations

from dataclasses import dataclass

#: Grades, worst last.
GRADES = ("good", "caution", "poor")


@dataclass(frozen=True)
class QualityIssue:
    """One reason to doubt some numbers; `level` is the grade it implies."""

    id: str
    level: str  # "poor", "caution" or "note" (does not lower the grade)
    text: str
    count: int = 0
    value_us: float | None = None
