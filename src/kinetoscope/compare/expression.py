"""The expectation language's syntax: tokens and the parse tree (`parse`).

Split from `expect` (which binds names to a trace's facts and evaluates) so each
module has one job: this one never sees a trace. The grammar is in `expect`'s
docstring; no user string is ever passed to `eval`.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

from ..errors import UsageError

OPS = ("<=", ">=", "==", "!=", "<", ">")
KEYWORDS = ("and", "or", "not")

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
