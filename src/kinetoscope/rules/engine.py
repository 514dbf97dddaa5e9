"""Run the registered rules on a trace; a rule that throws never sinks the report.

A rule that raises becomes a `not_checked` entry ("rule failed: ..."), so one broken
rule costs the user that rule, not the report. That same degradation would let a test
that expects a rule to stay silent pass when the rule crashes, so there is a strict
mode: with the environment variable `KINETOSCOPE_STRICT_RULES=1` (the test suite sets
it, `tests/conftest.py`) the exception propagates instead. It is read at each run, so
a test can turn it off for itself.
"""

from __future__ import annotations

import importlib
import os
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import TypeVar

from ..analysis.stats import trace_stats
from ..trace import Trace
from .base import REGISTRY, Finding, NotChecked, Rule
from .evidence_lines import attach_lines
from .merge import fit_savings, merge_causes, savings_budget
from .ranking import rank
from .two_cores import run_shared, worth_sharing

#: Rule family modules under `kinetoscope.rules`; importing one registers its rules.
RULE_MODULES: list[str] = [
    "regime_window",
    "regime",
    "regime_waits",
    "profiler_table",
    "cpu_lane",
    "hidden_memcpy",
    "cold_start",
    "gpu_lane",
    "kernel_variance",
    "dispatch",
    "kernel_names",
    "compile",
    "compile_guards",
    "compile_cost",
    "fusion",
    "training",
    "training_steps",
    "memory",
    "quality",
    "llm",
    "attention",
]

T = TypeVar("T")

#: set to 1 to let a rule's exception propagate instead of becoming "rule failed"
STRICT_ENV = "KINETOSCOPE_STRICT_RULES"


def strict_rules() -> bool:
    """Whether rule exceptions propagate (`STRICT_ENV` set to anything but "" or "0")."""
    return os.environ.get(STRICT_ENV, "") not in ("", "0")


def load_rules() -> dict[str, Rule]:
    """Every rule, in `RULE_MODULES` order whatever order the modules were first imported in.

    Some modules are imported early elsewhere (a command that needs one family), which
    would otherwise change the order of `not_checked` and make reports built in a fresh
    process (a pool or cluster worker) differ from the parent's.
    """
    order = {f"kinetoscope.rules.{m}": i for i, m in enumerate(RULE_MODULES)}
    for module in order:
        importlib.import_module(module)
    position = {rule_id: i for i, rule_id in enumerate(REGISTRY)}
    ranked = sorted(
        REGISTRY.values(),
        key=lambda r: (order.get(r.check.__module__, len(order)), position[r.id]),
    )
    return {r.id: r for r in ranked}


@dataclass
class RuleContext:
    """What a rule sees: the trace and its thresholds. Analyses shared between rules are
    kept by the trace (`Trace.memo`), the one cache, not here."""

    trace: Trace
    rule: Rule
    config: dict[str, dict[str, float]]

    def threshold(self, key: str) -> float:
        return self.config.get(self.rule.id, {}).get(key, self.rule.defaults[key])

    def analysis(self, fn: Callable[[Trace], T]) -> T:
        """`fn(trace)`, computed once per trace however many rules ask for it."""
        return self.trace.memo(fn)


@dataclass
class Skipped:
    id: str
    reason: str
    advice: str = ""

    def to_dict(self) -> dict[str, str]:
        return {"id": self.id, "reason": self.reason, "advice": self.advice}


@dataclass
class RuleOutcome:
    findings: list[Finding] = field(default_factory=list)
    not_checked: list[Skipped] = field(default_factory=list)


def run_rules(
    trace: Trace,
    config: dict[str, dict[str, float]] | None = None,
    only: Iterable[str] | None = None,
    *,
    share: bool = True,
) -> RuleOutcome:
    """All (or `only` the named) rules, findings in reading order (`ranking.rank`): those
    on one cause folded into one, savings bounded by the step (`rules.merge`). On a
    large trace the rules are shared with a second process (`two_cores`) unless `share`
    is False: a worker of a pool, whose pool already uses the cores."""
    rules = load_rules()
    wanted = [rules[rule_id] for rule_id in (only if only is not None else rules)]
    outcome = RuleOutcome()

    def check(rule: Rule, strict: bool) -> list[Finding] | Skipped:
        return _check(rule, RuleContext(trace, rule, config or {}), strict)

    if share and worth_sharing(trace):  # on two cores, from the statistics the rules share
        trace_stats(trace)
        results = run_shared(wanted, check, strict_rules())
    else:
        results = {rule.id: check(rule, strict_rules()) for rule in wanted}
    for rule in wanted:
        result = results[rule.id]
        if isinstance(result, Skipped):
            outcome.not_checked.append(result)
        else:
            outcome.findings.extend(result)
    findings = rank(merge_causes(outcome.findings, rules))
    fit_savings(findings, savings_budget(trace))
    outcome.findings = rank(findings)
    attach_lines(trace, outcome.findings)
    return outcome


def _check(rule: Rule, ctx: RuleContext, strict: bool) -> list[Finding] | Skipped:
    """The rule's findings, or why it was not checked; with `strict`, its error raised."""
    try:
        return list(rule.check(ctx))
    except NotChecked as skip:
        return Skipped(rule.id, skip.reason, skip.advice)
    except Exception as exc:  # noqa: BLE001 - a broken rule is reported, not fatal
        if strict or isinstance(exc, MemoryError):  # memory: the whole run's budget, not a rule
            raise
        return Skipped(rule.id, f"rule failed: {type(exc).__name__}: {exc}", "please report this")
