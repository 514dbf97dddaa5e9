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
A saving is also bounded by the part of the step it comes from: removing host
work shortens a step only while the device waits for the host, so host-side
savings share the device's idle part of the step; making kernels faster shortens
only the busy part. (On a trace without device work the whole step is host.)
"""

from __future__ import annotations

import statistics
from collections import defaultdict

from ..analysis.account.account import window_account
from ..analysis.steps import step_stats
from ..trace import Trace
from .base import SEVERITY_ORDER, Evidence, Finding, Rule

#: rules that see a symptom (a slow step, many calls, an idle device) rather than name a
#: mechanism: within one cause the others survive them
SYMPTOMS = frozenset({"step-outlier", "call-count", "gpu-idle-breakdown", "launch-latency"})
#: the verdict's own findings sum up causes: a named cause survives them too
VERDICT_FAMILY = "regime"
#: ... except the verdicts that the window is one-time work: they are the cause, named
#: call by call, and what restates it (cold-start) folds into them
WINDOW_STATE = frozenset({"cold-window", "compile-window"})
#: savings that shorten the device's own work (fewer, faster kernels and copies, hidden
#: communication): at most the part of the step the device is busy
DEVICE_SIDE = frozenset(
    {
        "fusion-opportunity",
        "exposed-communication",
        "kernel-variance",
        "attention-backend",
        "addmm-epilogue",
        "hidden-memcpy",
        "llm-kv-cache-concat",
    }
)
#: savings that remove host work or waits the device idles through: at most the part of
#: the step the device is idle (the rest: cold-start, step-outlier, only the whole step)
HOST_SIDE = frozenset(
    {
        "overhead-bound",
        "mixed",
        "data-bound",
        "sync-bound",
        "dataloader-bound",
        "host-sync",
        "kernel-gap",
        "launch-latency",
        "call-count",
        "heavyweight-launch",
        "metadata-only-ops",
        "optimizer-unfused",
        "compile-cpu-tax",
        "dispatch-dead-window",
        "llm-decode-overhead",
        "sync-flush",
    }
)


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
    """Lower is more specific: a verdict that the window is one-time work (it names every
    one-time call), a named mechanism, then another verdict, then a symptom."""
    rule = rules.get(f.id)
    kind = 2 if f.id in SYMPTOMS else 1 if rule and rule.family == VERDICT_FAMILY else 0
    if f.id in WINDOW_STATE:
        kind = -1
    return (kind, SEVERITY_ORDER[f.severity], -f.impact_us, f.id)


def _fold(keep: Finding, other: Finding) -> None:
    """`other` describes `keep`'s cause: its severity, saving and evidence join `keep`."""
    if SEVERITY_ORDER[other.severity] < SEVERITY_ORDER[keep.severity]:
        keep.severity = other.severity
    if keep.id not in WINDOW_STATE:  # a cold window's fix (warm up) saves no steady time
        keep.impact_us = max(keep.impact_us, other.impact_us)
    keep.merged += [i for i in (other.id, *other.merged) if i != keep.id and i not in keep.merged]
    keep.evidence.append(Evidence(f"also {other.id}: {other.title}", name=other.id))
    seen = {e.text for e in keep.evidence}
    keep.evidence += [e for e in other.evidence if e.text not in seen]


def savings_budget(trace: Trace) -> dict[str, float]:
    """What a fix can save per step: the median step ("step"; the whole window without
    steps) less its share of the window's one-time, profiler and untraced time (no steady
    fix saves those), split by the window account into the part the host holds while the
    device idles ("host") and the part the device works ("device")."""
    account = window_account(trace)
    step = statistics.median(s.end - s.start for s in step_stats(trace))
    if account.window_us > 0:
        step *= account.steady_us / account.window_us
    if account.on_cpu or not trace.device_work.any():
        # no device: every saving is host time (addmm-epilogue's add runs on the CPU)
        return {"step": step, "host": step, "device": step}
    device = step * account.steady_shares()["device"]
    return {"step": step, "host": max(step - device, 0.0), "device": device}


def fit_savings(findings: list[Finding], budget: dict[str, float]) -> None:
    """Bound each saving, in reading order, by what the ones above it left of the step and
    of the part of the step it comes from."""
    left = {k: max(v, 0.0) for k, v in budget.items()}
    for f in findings:
        part = "host" if f.id in HOST_SIDE else "device" if f.id in DEVICE_SIDE else None
        bound = min(left["step"], left[part]) if part else left["step"]
        if f.impact_us > bound:
            f.measured["impact_estimate_us"] = round(float(f.impact_us), 3)
            f.impact_us = bound
        left["step"] -= f.impact_us
        if part:
            left[part] -= f.impact_us
