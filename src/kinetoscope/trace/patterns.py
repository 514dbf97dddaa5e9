"""Name patterns a user gives (`chain --kernel/--op`, the MCP `chain` tool), matched
in time linear in the name whatever the pattern:

- no pattern character at all: a substring (`gemm`, `aten::mm`);
- glob characters only (`*`, `?`, `[...]`): a glob over the whole name (`*gemm*_nn`);
- anything else (`|`, `^`, `$`, `(`, `+`, `.`, `{`, `\\`): a regular expression searched
  in the name, in RE2's syntax.

Globs and regular expressions run on RE2 (`google-re2`), an automaton that never
backtracks. Python's `re` does: `(a+)+$` on a 29-character kernel name took 38.6 s,
doubling with each character. RE2 has no backreferences or lookaround; a pattern
using them is refused, as is any pattern RE2 cannot compile, in one line.
"""

from __future__ import annotations

from collections.abc import Callable

from ..errors import UsageError

_REGEX_ONLY = frozenset(".^$+{}\\|()")
#: the CLI's help for a pattern option, given what it matches
PATTERN_HELP = (
    "Pattern on {}: a plain name matches as a substring; with only * ? [...] a glob "
    "over the whole name; else an RE2 regular expression (linear time)."
)
_GLOB = frozenset("*?[")


class NamePattern:
    """`search(name)`: whether `name` matches; `kind` says how it was read."""

    def __init__(self, kind: str, match: Callable[[str], object]) -> None:
        self.kind = kind
        self._match = match

    def search(self, name: str) -> bool:
        return bool(self._match(name))


def name_pattern(pattern: str | None, what: str) -> NamePattern | None:
    """`pattern` read as the module docstring says (None: no filter); a pattern RE2
    refuses is a `UsageError` naming `what` (kernel, op)."""
    if pattern is None:
        return None
    chars = set(pattern)
    if not chars & (_REGEX_ONLY | _GLOB):
        return NamePattern("substring", lambda name: pattern in name)
    if chars & _REGEX_ONLY:
        return NamePattern("regex", _compiled(pattern, pattern, what).search)
    return NamePattern("glob", _compiled(glob_regex(pattern), pattern, what).fullmatch)


def glob_regex(glob: str) -> str:
    """The RE2 expression a glob means: `*` any run, `?` one character, `[...]` (or
    `[!...]`) a class, everything else literal; an unclosed `[` is literal."""
    out, i = [], 0
    while i < len(glob):
        c = glob[i]
        i += 1
        if c == "*":
            out.append(".*")
        elif c == "?":
            out.append(".")
        elif c == "[" and (end := _class_end(glob, i)) > 0:
            negate = glob[i] == "!"
            body = glob[i + negate : end].replace("\\", "\\\\").replace("^", "\\^")
            out.append(("[^" if negate else "[") + body + "]")
            i = end + 1
        else:
            out.append(_literal(c))
    return "(?s)" + "".join(out)


def _class_end(glob: str, start: int) -> int:
    """Index of the `]` closing a class whose body starts at `start` (a `]` first in
    the body, after any `!`, is literal), or -1."""
    j = start + (glob[start : start + 1] == "!")
    j += glob[j : j + 1] == "]"
    return glob.find("]", j)


def _literal(c: str) -> str:
    return "\\" + c if not c.isalnum() and c != "_" and c.isascii() else c


def _compiled(expression: str, pattern: str, what: str):
    try:
        import re2
    except ImportError:  # declared in pyproject.toml; a bare checkout may lack it
        raise UsageError(
            f"{what} pattern {pattern!r}: globs and regular expressions need google-re2 "
            "(pip install google-re2); a plain name matches as a substring"
        ) from None
    options = re2.Options()
    options.log_errors = False  # RE2 would print its own (raw) line on stderr
    try:
        return re2.compile(expression, options)
    except re2.error as exc:
        reason = exc.args[0] if exc.args else exc
        reason = reason.decode("utf-8", "replace") if isinstance(reason, bytes) else reason
        raise UsageError(f"bad {what} pattern {pattern!r}: {reason} (RE2 syntax)") from None
