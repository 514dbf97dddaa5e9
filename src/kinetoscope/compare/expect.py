"""Expectations for CI: a tiny, safe language for `check --expect` and `assert_trace`.

Grammar (no user string is ever passed to `eval`; this is a tokenizer plus a
recursive-descent parser)::

    expr    := and ("or" and)*
    and     := unary ("and" unary)*
    unary   := "not" unary | "(" expr ")" | compare | NAME
    compare := NAME OP (NUMBER [UNIT] | NAME)        OP: <= < >= > == !=

`NAME OP NUMBER` compares a metric (`kernels_per_step <= 5`); units convert to
the metric's own (`step_time_us <= 12ms`, `device_busy_ratio >= 80%`), and
time metrics can be named in any unit (`step_time_ms` is `step_time_us / 1000`).
`regime == compute-bound` compares the verdict. A bare `NAME` holds when a
finding with that id is in the report (or the verdict is that regime), so
`not dataloader-bound` asserts a finding is absent. Parsing catches syntax
errors; `bind` catches unknown names before anything is measured, so a typo
exits 2 instead of silently passing.

An expectation can also be *not checked*: it names a rule that could not run on
this trace (explain's "Not checked": `dataloader-bound` without DataLoader
ranges, device rules on a host-only trace) or a metric the trace does not
measure (`Facts.unmeasured`: `kernels_per_step` on a CPU-only trace is not 0
kernels but a device nobody recorded; `data_share` without a DataLoader). Absence
of a finding the rule never looked for proves nothing, nor does a 0 that was
never measured, so such an expectation neither passes nor fails: the third
value of Kleene's logic (`not` keeps it, `and` is false if any part is false,
`or` true if any part is true, else it stays not checked), and `check` exits
non-zero on it unless told `--allow-unmeasured`.
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass, field

from ..formatting.units import fmt_pct, fmt_us
from .expression import (
    BoolOp,
    Compare,
    ExpressionError,
    Node,
    Not,
    Present,
    parse,
)

#: Factor from a time unit to microseconds.
TIME_UNITS = {"us": 1.0, "ms": 1e3, "s": 1e6}
#: Metrics whose name ends like this are fractions, so `%` applies to them.
RATIO_SUFFIXES = ("_ratio", "_share", "_fraction")


# ---- what expectations are measured against ------------------------------
@dataclass
class Facts:
    """The numbers and verdicts of one trace that expectations can name."""

    metrics: dict[str, float | None]
    regime: str | None
    findings: dict[str, str]  # finding id -> severity
    #: every finding id and regime a report could contain (to reject typos)
    known_ids: frozenset[str] = field(default_factory=frozenset)
    #: rules that could not run on this trace -> why (the report's `not_checked`)
    not_checked: dict[str, str] = field(default_factory=dict)
    #: metrics this trace cannot measure -> why (their value, 0 or None, means nothing)
    unmeasured: dict[str, str] = field(default_factory=dict)

    def _base(self, name: str) -> tuple[str, float] | None:
        """(the metric `name` reads, the factor from it), resolving `*_ms`/`*_s` aliases
        of `*_us` metrics; None for an unknown name."""
        if name in self.metrics:
            return name, 1.0
        for unit, factor in TIME_UNITS.items():
            if unit != "us" and name.endswith("_" + unit):
                base = name[: -len(unit)] + "us"
                if base in self.metrics:
                    return base, factor
        return None

    def metric(self, name: str) -> tuple[bool, float | None]:
        """(known, value) for `name`; the value is None where it was not measured."""
        found = self._base(name)
        if found is None:
            return False, None
        base, factor = found
        value = self.metrics[base]
        return True, None if value is None or base in self.unmeasured else value / factor

    def why_unmeasured(self, name: str) -> str:
        """Why this trace cannot measure the metric `name`."""
        found = self._base(name)
        return self.unmeasured.get(found[0] if found else name, "not measured in this trace")

    def names(self) -> list[str]:
        return sorted(self.metrics) + ["regime"]

    def spellings(self) -> list[str]:
        """Every name `metric` accepts: each `*_us` time also as `*_ms` and `*_s`."""
        times = [n[:-2] + u for n in self.metrics if n.endswith("_us") for u in TIME_UNITS]
        return sorted({*self.metrics, *times})


@dataclass
class Outcome:
    """One expectation's verdict with what was measured. `checked` is False when the
    trace cannot tell (a rule that did not run, a metric not measured): then `passed`
    is False too, and the line says NOT CHECKED rather than PASS or FAIL."""

    text: str
    passed: bool
    measured: str
    checked: bool = True

    @property
    def status(self) -> str:
        return "NOT CHECKED" if not self.checked else "PASS" if self.passed else "FAIL"

    def line(self) -> str:
        return f"{self.status}  {self.text}  (measured: {self.measured})"


def _time_unit(name: str) -> str | None:
    return next((u for u in TIME_UNITS if name.endswith("_" + u)), None)


def bind(node: Node, facts: Facts, text: str) -> None:
    """Reject names, units and operators that cannot apply to these facts (exit 2)."""
    if isinstance(node, BoolOp):
        for part in node.parts:
            bind(part, facts, text)
    elif isinstance(node, Not):
        bind(node.inner, facts, text)
    elif isinstance(node, Present):
        if node.name not in facts.known_ids and node.name not in facts.findings:
            known = ", ".join(sorted(facts.known_ids)) or "none"
            raise ExpressionError(text, f"unknown finding or regime {node.name!r} (known: {known})")
    elif node.name == "regime":
        if not isinstance(node.value, str) or node.op not in ("==", "!="):
            raise ExpressionError(text, "regime only compares with == or != to a regime name")
        if node.value not in facts.known_ids and node.value != facts.regime:
            raise ExpressionError(text, f"unknown regime {node.value!r}")
    else:
        known, _ = facts.metric(node.name)
        if not known:
            close = difflib.get_close_matches(node.name, facts.spellings(), n=3, cutoff=0.75)
            hint = f"did you mean {' or '.join(close)}? " if close else ""
            names = ", ".join(facts.names())
            raise ExpressionError(
                text,
                f"unknown metric {node.name!r} ({hint}known: {names}; "
                "a time in us also reads in ms or s: step_time_ms, window_s)",
            )
        if isinstance(node.value, str):
            raise ExpressionError(text, f"{node.name} is a number; compare it with a number")
        if node.unit == "%" and not node.name.endswith(RATIO_SUFFIXES):
            raise ExpressionError(text, f"% only applies to ratios, not {node.name}")
        if node.unit in TIME_UNITS and _time_unit(node.name) is None:
            raise ExpressionError(text, f"{node.name} is not a time; drop the unit {node.unit!r}")


def _threshold(node: Compare) -> float:
    value = float(node.value)
    if node.unit == "%":
        return value / 100.0
    if node.unit in TIME_UNITS:
        return value * TIME_UNITS[node.unit] / TIME_UNITS[_time_unit(node.name)]
    return value


_COMPARE = {
    "<=": lambda a, b: a <= b,
    "<": lambda a, b: a < b,
    ">=": lambda a, b: a >= b,
    ">": lambda a, b: a > b,
    "==": lambda a, b: a == b,
    "!=": lambda a, b: a != b,
}


def format_number(value: float) -> str:
    if float(value).is_integer() and abs(value) < 1e15:
        return str(int(value))
    return f"{value:.4g}"


#: An expectation's value: True, False, or None (the trace cannot tell: not checked).
Truth = bool | None


def _and(values: list[Truth]) -> Truth:
    if any(v is False for v in values):
        return False
    return None if any(v is None for v in values) else True


def _or(values: list[Truth]) -> Truth:
    if any(v is True for v in values):
        return True
    return None if any(v is None for v in values) else False


def _evaluate(node: Node, facts: Facts) -> tuple[Truth, list[str]]:
    if isinstance(node, BoolOp):
        results = [_evaluate(part, facts) for part in node.parts]
        combine = _and if node.op == "and" else _or
        return combine([r for r, _ in results]), [m for _, ms in results for m in ms]
    if isinstance(node, Not):
        ok, measured = _evaluate(node.inner, facts)
        return (None if ok is None else not ok), measured
    if isinstance(node, Present):
        if node.name in facts.findings:
            return True, [f"{node.name} present ({facts.findings[node.name]})"]
        if facts.regime == node.name:
            return True, [f"regime is {node.name}"]
        if node.name in facts.not_checked:
            return None, [f"{node.name} not checked: {facts.not_checked[node.name]}"]
        return False, [f"{node.name} absent"]
    if node.name == "regime":
        ok = _COMPARE[node.op](facts.regime, node.value)
        return ok, [f"regime={facts.regime or 'unknown'}"]
    _, value = facts.metric(node.name)
    if value is None:
        return None, [f"{node.name} not measured: {facts.why_unmeasured(node.name)}"]
    return _COMPARE[node.op](value, _threshold(node)), [_measured(node.name, value)]


def _measured(name: str, value: float) -> str:
    """`device_busy_ratio=0.1343 (13.4%)`, `step_time_ms=0.86 (860 us)`: the number the
    expectation compared, then the same figure as explain and summary print it."""
    text = f"{name}={format_number(value)}"
    if name.endswith(RATIO_SUFFIXES):
        return f"{text} ({fmt_pct(value)})"
    unit = _time_unit(name)
    if unit is not None:
        return f"{text} ({fmt_us(value * TIME_UNITS[unit])})"
    return text


def check_all(texts: list[str], facts: Facts) -> list[Outcome]:
    """All expectations, or `ExpressionError` before measuring anything if one is bad."""
    nodes = []
    for text in texts:
        node = parse(text)
        bind(node, facts, text)
        nodes.append(node)
    outcomes = []
    for text, node in zip(texts, nodes, strict=True):
        value, measured = _evaluate(node, facts)
        outcomes.append(Outcome(text, value is True, ", ".join(measured), value is not None))
    return outcomes


def check(text: str, facts: Facts) -> Outcome:
    """Parse, bind and evaluate one expectation against `facts`."""
    return check_all([text], facts)[0]
