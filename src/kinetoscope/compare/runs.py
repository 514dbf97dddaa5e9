"""A trace file as one side of a comparison: the trace plus what `explain` says about it."""

from __future__ import annotations

from pathlib import Path

from ..api import explain
from ..trace import load
from .diff_model import Run


def load_run(path: str | Path) -> Run:
    """Load `path` and explain it (raises `TraceError` on bad input)."""
    trace = load(path)
    report = explain(trace)
    return Run(trace, report.findings, report.verdict.regime, report.timeline.steps)
