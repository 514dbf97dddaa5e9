"""`kinetoscope check TRACE --expect EXPR ...`: assertions on a trace, for CI.

Each expectation prints its measured value and PASS, FAIL or NOT CHECKED with
the reason (it names a rule that could not run on this trace, or a metric it
does not measure: device figures without device activity, data wait without a
DataLoader); exit 1 when any fails or is not checked (a gate that cannot see
must not pass: `--allow-unmeasured` lets a NOT CHECKED through), 2 when an
expression (or the baseline) is bad.
"""

from __future__ import annotations

from pathlib import Path

import typer

from .. import progress
from ..errors import UsageError


def register(app: typer.Typer) -> None:
    @app.command("check")
    def check(
        trace: Path = typer.Argument(..., metavar="TRACE", help="Trace file to check."),
        expect: list[str] = typer.Option(
            [],
            "--expect",
            "-e",
            help="Expectation, e.g. 'kernels_per_step <= 5', 'regime == compute-bound', "
            "'not dataloader-bound', 'step_time_ms <= 12'. Repeatable.",
        ),
        baseline: Path | None = typer.Option(
            None, "--baseline", help="A saved `explain --format json` report to compare with."
        ),
        max_regression: str = typer.Option(
            "10%", "--max-regression", help="Allowed slowdown per step against --baseline."
        ),
        allow_unmeasured: bool = typer.Option(
            False,
            "--allow-unmeasured",
            help="Exit 0 when the only problem is an expectation the trace cannot check.",
        ),
    ) -> None:
        """Check expectations (and a baseline) against a trace; exit 1 when one fails or
        cannot be checked on this trace (unless --allow-unmeasured)."""
        from ..compare.check import run_check

        if not expect and baseline is None:
            raise UsageError("nothing to check: give --expect EXPR and/or --baseline REPORT")
        with progress.reporting():  # a large trace says how far reading has got
            outcomes = run_check(trace, expect, baseline, max_regression)
        for outcome in outcomes:
            typer.echo(outcome.line())
        unknown = sum(not o.checked for o in outcomes)
        failed = sum(o.checked and not o.passed for o in outcomes)
        passed = len(outcomes) - failed - unknown
        tail = f", {unknown} not checked (the trace cannot tell: see explain's Not checked)"
        typer.echo(f"{passed} passed, {failed} failed" + (tail if unknown else ""))
        if failed or (unknown and not allow_unmeasured):
            raise typer.Exit(1)
