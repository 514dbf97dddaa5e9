"""A trace file as one side of a comparison: the trace plus what the rules say about it."""

from __future__ import annotations

from pathlib import Path

from ..rules.engine import run_rules
from ..trace import load
from .diff import Run


def load_run(path: str | Path) -> Run:
    """Load `path` and run the rules on it (raises `TraceError` on bad input)."""
    trace = load(path)
    return Run(trace, run_rules(trace).findings, None)
