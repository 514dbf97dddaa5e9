"""What a rule is and what it returns.

A rule is a function `check(ctx) -> list[Finding]` registered with `@rule`.
It raises `NotChecked` when the trace lacks the data it needs (the report lists
it with the reason and how to record that data). Thresholds come from
`ctx.threshold(key)`, so every one is overridable from a config file or
`--set rule.key=value`, and findings report the measured value next to it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal

Severity = Literal["info", "warn", "critical"]
SEVERITY_ORDER = {"critical": 0, "warn": 1, "info": 2}


@dataclass
class Evidence:
    """One fact backing a finding, findable in Perfetto.

    `ts_us` is relative to the trace start (what Perfetto shows); `dur_us`,
    `step` and `name` locate the event; `value`/`unit` carry the number. `source` is
    the user's source line that holds the event (`train.py:42 (step)`), filled in for
    every rule after it ran where the trace has Python stacks (`rules/evidence_lines.py`).
    """

    text: str
    name: str | None = None
    ts_us: float | None = None
    dur_us: float | None = None
    step: int | None = None
    value: float | None = None
    unit: str | None = None
    source: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {k: v for k, v in self.__dict__.items() if v is not None}


def event_evidence(trace, index, text: str, **fields: Any) -> Evidence:
    """Evidence located at trace event `index`: its name, start and duration.

    Rules point at the event that shows the problem so Perfetto can open it; the
    three locating fields always come from that one event, so they are filled in
    here (`fields` adds step, value, unit)."""
    return Evidence(
        text,
        name=trace.name(index),
        ts_us=trace.rel(trace.ts[index]),
        dur_us=float(trace.dur[index]),
        **fields,
    )


@dataclass
class Finding:
    id: str
    severity: Severity
    title: str
    explanation: str
    suggestion: str
    impact_us: float = 0.0
    evidence: list[Evidence] = field(default_factory=list)
    #: measured values and the thresholds they crossed, e.g. {"ratio": 0.01, "threshold": 0.25}
    measured: dict[str, Any] = field(default_factory=dict)
    #: what the finding is about, as keys another rule can name too ("data-wait", "step:3"):
    #: findings with the same cause describe one thing and the engine folds them into one
    cause: tuple[str, ...] = ()
    #: ids of the findings folded into this one (they fired, on this finding's cause)
    merged: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "severity": self.severity,
            "title": self.title,
            "explanation": self.explanation,
            "suggestion": self.suggestion,
            "impact_us": round(float(self.impact_us), 3),
            "measured": self.measured,
            "evidence": [e.to_dict() for e in self.evidence],
            "merged": list(self.merged),
        }


class NotChecked(Exception):
    """The rule cannot run on this trace; `reason` says why, `advice` how to fix it."""

    def __init__(self, reason: str, advice: str = "") -> None:
        super().__init__(reason)
        self.reason = reason
        self.advice = advice


@dataclass(frozen=True)
class Rule:
    id: str
    family: str
    summary: str
    defaults: dict[str, float]
    check: Callable[[Any], list[Finding]]


REGISTRY: dict[str, Rule] = {}


def rule(id: str, family: str, summary: str, **defaults: float):
    """Register `check(ctx) -> list[Finding]` as rule `id` with default thresholds."""

    def wrap(check: Callable[[Any], list[Finding]]):
        if id in REGISTRY:
            raise ValueError(f"rule {id!r} registered twice")
        REGISTRY[id] = Rule(id, family, summary, dict(defaults), check)
        return check

    return wrap
