"""One cause, one finding; savings that fit the step.

Rules look at a trace from different sides, so several may describe one thing:
a data wait is `dataloader-bound` (the DataLoader's `__next__`), `data-bound`
(the verdict: waiting is the largest part of the step) and `call-count` (the
ops the collate function calls inside `__next__`); a cold first step is
`cold-start` and the `step-outlier` it makes. A finding names what it is about
in `cause` ("data-wait", "step:3"); findings with the same cause fold into the
most specific one, which keeps the others' evidence and lists their ids in
`merged`. Their savings are one saving (the largest), never a sum.

Savings (`impact_us`, per step) of different causes add up only while they
come from disjoint parts of the step; estimates that would add up to more than
the step overlap, so, read in ranking order, each finding is bounded by what the
findings ranked above it left of the median step (the window without steps).
"""

from __future__ import annotations

import statistics
from collections import defaultdict

from ..analysis.steps import step_stats
from ..trace import Trace
from .base import SEVERITY_ORDER, Evidence, Finding, Rule

#: rules that see a symptom (a slow step, many calls, an idle device) rather than name a
#: mechanism: within one cause the others survive them
SYMPTOMS = frozenset({"step-outlier", "call-count", "gpu-idle-breakdown", "launch-latency"})
#: the verdict's own findings sum up causes: a named cause survives them too
VERDICT_FAMILY = "regime"


def merge_causes(findings: list[Finding], rules: dict[str, Rule]) -> list[Finding]:
    """`findings` with every group sharing a cause folded into its most specific member."""
    groups: dict[tuple[str, ...], list[Finding]] = defaultdict(list)
    for f in findings:
        if f.cause:
            groups[f.cause].append(f)
    folded: set[int] = set()
    for members in groups.values():
        if len(members) < 2:
            continue
        keep = min(members, key=lambda f: _specificity(f, rules))
        for other in members:
            if other is not keep:
                _fold(keep, other)
                folded.add(id(other))
    return [f for f in findings if id(f) not in folded]


def _specificity(f: Finding, rules: dict[str, Rule]) -> tuple:
    """Lower is more specific: a named mechanism, then a verdict, then a symptom."""
    rule = rules.get(f.id)
    kind = 2 if f.id in SYMPTOMS else 1 if rule and rule.family == VERDICT_FAMILY else 0
    return (kind, SEVERITY_ORDER[f.severity], -f.impact_us, f.id)


def _fold(keep: Finding, other: Finding) -> None:
    """`other` describes `keep`'s cause: its severity, saving and evidence join `keep`."""
    if SEVERITY_ORDER[other.severity] < SEVERITY_ORDER[keep.severity]:
        keep.severity = other.severity
    keep.impact_us = max(keep.impact_us, other.impact_us)
    keep.merged += [other.id, *other.merged]
    keep.evidence.append(Evidence(f"also {other.id}: {other.title}", name=other.id))
    seen = {e.text for e in keep.evidence}
    keep.evidence += [e for e in other.evidence if e.text not in seen]


def savings_budget(trace: Trace) -> float:
    """The time one step takes: the median step (the whole window without steps)."""
    return statistics.median(s.end - s.start for s in step_stats(trace))


def fit_savings(findings: list[Finding], budget_us: float) -> None:
    """Bound each saving, in reading order, by what the ones above it left of the step."""
    left = max(budget_us, 0.0)
    for f in findings:
        if f.impact_us > left:
            f.measured["impact_estimate_us"] = round(float(f.impact_us), 3)
            f.impact_us = left
        left -= f.impact_us
