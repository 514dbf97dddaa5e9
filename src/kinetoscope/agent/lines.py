"""The one line a failed tool call answers: the CLI's, whatever went wrong.

Module-level so that a tool call's child process (`agent.limits`) can turn its own
failure into the line and send only that back."""

from __future__ import annotations

from ..errors import KinetoscopeError
from ..report.console import inert
from ..trace.budget import backstop_line


def error_line(exc: BaseException) -> str:
    """`kinetoscope: error: ...` for bad input and refusals, `internal error` otherwise."""
    if isinstance(exc, KinetoscopeError):
        return f"kinetoscope: error: {exc}"
    if isinstance(exc, MemoryError) and (line := backstop_line()) is not None:
        return f"kinetoscope: error: {line}"  # the child's own limit (`limits._answer`)
    if isinstance(exc, (OSError, RecursionError, MemoryError, ValueError)):
        return f"kinetoscope: error: {inert(str(exc))}"
    return f"kinetoscope: internal error: {type(exc).__name__}: {inert(str(exc))}"
