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
measure. Absence of a finding the rule never looked for proves nothing, so
such an expectation neither passes nor fails: the third value of Kleene's logic
(`not` keeps it, `and` is false if any part is false, `or` true if any part is
true, else it stays not checked), and `check` exits non-zero on it.
"""

from __future__ import annotations

import difflib
import math
import re
from dataclasses import dataclass, field

from ..errors import UsageError
from ..formatting.units import fmt_pct, fmt_us

OPS = ("<=", ">=", "==", "!=", "<", ">")
KEYWORDS = ("and", "or", "not")
#: Factor from a time unit to microseconds.
TIME_UNITS = {"us": 1.0, "ms": 1e3, "s": 1e6}
#: Metrics whose name ends like this are fractions, so `%` applies to them.
RATIO_SUFFIXES = ("_ratio", "_share", "_fraction")

#: Expressions nested deeper than this (parentheses, `not`) are refused: the parser
#: and the evaluator recurse once per level.
MAX_DEPTH = 64

# No alternative can backtrack: a number is matched greedily and the character
# after it checked in `tokenize` (a lookahead after `\d+\.?\d*` made a 20,000-digit
# number followed by a letter take seconds, retrying every split of the digits).
_TOKEN = re.compile(
    r"\s*(?:"
    r"(?P<num>-?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?)"
    r"|(?P<op><=|>=|==|!=|<|>)"
    r"|(?P<paren>[()])"
    r"|(?P<name>[A-Za-z_][A-Za-z0-9_.\-]*)"
    r")"
)


class ExpressionError(UsageError):
    """The expectation cannot be parsed or names something that does not exist (exit 2)."""

    def __init__(self, text: str, problem: str) -> None:
        self.text = text
        shown = text if len(text) <= 80 else text[:60] + "..." + text[-12:]
        super().__init__(f"bad expectation {shown!r}: {problem}")


# ---- syntax tree ------------------------------------------------------
@dataclass(frozen=True)
class Compare:
    name: str
    op: str
    value: float | str
    unit: str | None = None


@dataclass(frozen=True)
class Present:
    name: str


@dataclass(frozen=True)
class Not:
    inner: Node


@dataclass(frozen=True)
class BoolOp:
    op: str  # "and" | "or"
    parts: tuple[Node, ...]


Node = Compare | Present | Not | BoolOp


@dataclass(frozen=True)
class Token:
    kind: str  # num | op | paren | name | kw | end
    text: str
    unit: str | None = None


_UNIT = re.compile(r"\s*(%|us|ms|s)")
_WORD_CHAR = re.compile(r"[A-Za-z0-9_]")


def tokenize(text: str) -> list[Token]:
    """The tokens of `text`, in time linear in its length."""
    tokens: list[Token] = []
    pos = 0
    stripped = text.rstrip()
    while pos < len(stripped):
        m = _TOKEN.match(stripped, pos)
        if not m or m.end() == pos:
            raise _unexpected(text, stripped[pos:])
        pos = m.end()
        if m["num"] is not None:
            unit = _UNIT.match(stripped, pos)
            if unit and not _WORD_CHAR.match(stripped, unit.end()):
                pos = unit.end()
            else:
                unit = None
            if _WORD_CHAR.match(stripped, pos):  # "12abc": neither a number nor a name
                raise _unexpected(text, stripped[m.start("num") :])
            if not math.isfinite(float(m["num"])):
                raise ExpressionError(text, f"number out of range: {_clipped(m['num'])}")
            tokens.append(Token("num", m["num"], unit[1] if unit else None))
        elif m["op"]:
            tokens.append(Token("op", m["op"]))
        elif m["paren"]:
            tokens.append(Token("paren", m["paren"]))
        else:
            word = m["name"]
            tokens.append(Token("kw" if word in KEYWORDS else "name", word))
    tokens.append(Token("end", ""))
    return tokens


def _clipped(word: str) -> str:
    return repr(word if len(word) <= 16 else word[:12] + "...")


def _unexpected(text: str, rest: str) -> ExpressionError:
    bad = rest.strip()[:12]
    hint = " (compare with ==)" if bad.startswith("=") else ""
    return ExpressionError(text, f"unexpected {bad!r}{hint}")


class _Parser:
    def __init__(self, text: str) -> None:
        self.text = text
        self.tokens = tokenize(text)
        self.pos = 0
        self.depth = 0  # `not` and `(` levels open around the current token

    def peek(self) -> Token:
        return self.tokens[self.pos]

    def take(self) -> Token:
        tok = self.tokens[self.pos]
        self.pos += 1
        return tok

    def fail(self, problem: str) -> ExpressionError:
        return ExpressionError(self.text, problem)

    def parse(self) -> Node:
        if self.peek().kind == "end":
            raise self.fail("empty expression")
        node = self.expr()
        if self.peek().kind != "end":
            raise self.fail(f"unexpected {self.peek().text!r}")
        return node

    def expr(self) -> Node:
        return self._chain("or", self.conj)

    def conj(self) -> Node:
        return self._chain("and", self.unary)

    def _chain(self, word: str, sub) -> Node:
        parts = [sub()]
        while self.peek().kind == "kw" and self.peek().text == word:
            self.take()
            parts.append(sub())
        return parts[0] if len(parts) == 1 else BoolOp(word, tuple(parts))

    def unary(self) -> Node:
        tok = self.take()
        if tok.kind == "kw" and tok.text == "not":
            return Not(self._nested(self.unary))
        if tok.kind == "paren" and tok.text == "(":
            node = self._nested(self.expr)
            if self.take().text != ")":
                raise self.fail("missing ')'")
            return node
        if tok.kind != "name":
            raise self.fail(f"expected a metric or finding name, got {tok.text or 'the end'!r}")
        if self.peek().kind != "op":
            return Present(tok.text)
        op = self.take().text
        rhs = self.take()
        if rhs.kind == "num":
            return Compare(tok.text, op, float(rhs.text), rhs.unit)
        if rhs.kind == "name":
            return Compare(tok.text, op, rhs.text)
        raise self.fail(f"expected a number or a name after {op!r}")

    def _nested(self, sub) -> Node:
        """`sub()` one level deeper, refused past `MAX_DEPTH` levels."""
        self.depth += 1
        if self.depth > MAX_DEPTH:
            raise self.fail(f"nested more than {MAX_DEPTH} levels deep ('not' and parentheses)")
        node = sub()
        self.depth -= 1
        return node


def parse(text: str) -> Node:
    """Parse one expectation; raises `ExpressionError` (exit 2) on bad syntax."""
    return _Parser(text).parse()


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

    def metric(self, name: str) -> tuple[bool, float | None]:
        """(known, value) for `name`, resolving unit aliases of `*_us` metrics."""
        if name in self.metrics:
            return True, self.metrics[name]
        for unit, factor in TIME_UNITS.items():
            if unit != "us" and name.endswith("_" + unit):
                base = name[: -len(unit)] + "us"
                if base in self.metrics:
                    value = self.metrics[base]
                    return True, None if value is None else value / factor
        return False, None

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
        return None, [f"{node.name} not measured in this trace"]
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
