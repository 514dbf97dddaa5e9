"""What a profiling cycle says once its trace is written: one verdict line, a few
numbers for a metrics logger, and the outcome of the user's `check` expressions.

Shared by `trace_handler(explain=True)` and the framework callbacks, so a plain
loop, a `Trainer` and a Lightning run print the same line for the same trace.
"""

from __future__ import annotations

import os
import sys
import warnings
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path

from ..api import explain
from ..compare.expect import Outcome, check_all, parse
from ..compare.facts import facts_from_report
from ..report.console import inert
from ..report.model import Report

#: what to do when an expectation fails: warn (the run goes on) or raise (it stops)
ON_FAIL = ("warn", "raise")


class ExpectationWarning(UserWarning):
    """A `check` expectation failed on a profiling cycle (the run goes on)."""


class ExpectationFailed(AssertionError):
    """A `check` expectation failed on a profiling cycle and `on_fail="raise"` was asked."""


@dataclass
class CycleResult:
    """One cycle's reading: the report, the line printed, metrics and failed checks."""

    cycle: int
    trace: Path
    report: Report
    line: str
    metrics: dict[str, float | str]
    failed: list[Outcome] = field(default_factory=list)

    @property
    def numbers(self) -> dict[str, float]:
        """The numeric metrics: what a scalar logger (TensorBoard, W&B) accepts."""
        return {k: v for k, v in self.metrics.items() if isinstance(v, float)}


class CycleReader:
    """Explains each written trace, prints its verdict line and checks expectations.

    Expressions are parsed when the reader is made, so a typo fails before training
    starts rather than after the first cycle.
    """

    def __init__(
        self,
        expect: Iterable[str] | None = None,
        on_fail: str = "warn",
        echo: Callable[[str], None] | None = None,
        allow_unmeasured: bool = False,
    ) -> None:
        if on_fail not in ON_FAIL:
            raise ValueError(f"on_fail must be one of {', '.join(ON_FAIL)}, not {on_fail!r}")
        self.expect = [expect] if isinstance(expect, str) else list(expect or [])
        for text in self.expect:
            parse(text)
        self.on_fail = on_fail
        #: an expectation the trace cannot check (NOT CHECKED) fails, as in `check`, unless
        self.allow_unmeasured = allow_unmeasured
        self.echo = echo or _to_stderr
        self.results: list[CycleResult] = []

    def __call__(self, trace: Path) -> CycleResult:
        report = explain(trace)
        outcomes = check_all(self.expect, facts_from_report(report)) if self.expect else []
        failed = [o for o in outcomes if not (o.passed or self.allow_unmeasured and not o.checked)]
        result = CycleResult(
            cycle=len(self.results) + 1,  # counted from 1, as the trace's metadata counts
            trace=Path(trace),
            report=report,
            line=verdict_line(report, trace, len(self.results) + 1),
            metrics=cycle_metrics(report),
            failed=failed,
        )
        self.results.append(result)
        self.echo(result.line)
        for outcome in failed:
            self.echo(f"kinetoscope: {outcome.line()}")
        if failed:
            message = f"{trace}: {len(failed)} of {len(outcomes)} expectation(s) failed: " + (
                "; ".join(o.text for o in failed)
            )
            if self.on_fail == "raise":
                raise ExpectationFailed(message)
            warnings.warn(message, ExpectationWarning, stacklevel=2)
        return result


def verdict_line(report: Report, trace: str | os.PathLike, cycle: int) -> str:
    """`kinetoscope: cycle 1: OVERHEAD-BOUND: ... (file)`: the verdict as explain states
    it, the regime said once (explain's summary starts with it: `compute-bound: ...`)."""
    regime = report.verdict.regime
    summary = report.verdict.summary
    if summary.lower().startswith(f"{regime}:"):
        summary = summary[len(regime) + 1 :].lstrip()
    return (
        f"kinetoscope: cycle {cycle}: {regime.upper()}: "
        f"{inert(summary)} ({inert(os.fspath(trace))})"
    )


#: What a metrics logger gets, name -> the report metric: each name says what it is
#: counted over, so a chart of cycles never mixes a per-step median with a window total.
LOGGED = {
    "step_time_us_per_step": "step_time_us",
    "host_time_us_per_step": "host_time_per_step_us",
    "device_busy_us_per_step": "device_busy_per_step_us",
    "device_busy_ratio": "device_busy_ratio",
}


def cycle_metrics(report: Report) -> dict[str, float | str]:
    """Numbers worth a metrics logger (TensorBoard, W&B): the regime, per-step medians
    (`*_per_step`, as explain's step table gives them), device busy over host time, and
    the findings of the cycle."""
    out: dict[str, float | str] = {"kinetoscope/regime": report.verdict.regime}
    for name, key in LOGGED.items():
        if report.metrics.get(key) is not None:
            out[f"kinetoscope/{name}"] = float(report.metrics[key])
    out["kinetoscope/findings_per_cycle"] = float(len(report.findings))
    return out


def _to_stderr(line: str) -> None:
    print(line, file=sys.stderr, flush=True)
