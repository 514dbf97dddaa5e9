"""`kinetoscope diff A B`: what changed between two runs of one program, and why it matters."""

from __future__ import annotations

from pathlib import Path

import typer

from .. import progress
from ..errors import UsageError


def register(app: typer.Typer) -> None:
    @app.command("diff")
    def diff(
        a: Path = typer.Argument(
            ..., metavar="A", help="Trace of the first run (the baseline, A)."
        ),
        b: Path = typer.Argument(..., metavar="B", help="Trace of the second run (B)."),
        format: str = typer.Option("text", "--format", "-f", help="text, md, json or html."),
        output: Path | None = typer.Option(
            None, "--output", "-o", help="Write to this file instead of stdout."
        ),
        force: bool = typer.Option(
            False, "--force", help="Replace the -o file if it exists (default: FILE_2, ...)."
        ),
    ) -> None:
        """Compare two traces: per-step times, kernels, host ops, findings, and a conclusion."""
        from ..compare.diff import diff_runs
        from ..compare.runs import load_run
        from ..files.outputs import emit, refuse_inputs
        from ..pipeline.timeline_sides import diff_sides
        from ..report.console import output_width
        from ..report.diff_render import RENDERERS, to_html, to_text

        if format not in RENDERERS:
            raise UsageError(f"unknown format {format!r} (choose from {', '.join(RENDERERS)})")
        if output is not None:  # before any work: the inputs are never written over
            refuse_inputs(output, [a, b])
        with progress.reporting():  # a large trace says how far reading has got
            runs = (load_run(a), load_run(b))
            result = diff_runs(*runs)
        if format == "text":
            text = to_text(result, width=output_width())
        elif format == "html":  # the page draws each run's timeline, built from its trace
            text = to_html(result, diff_sides(result, runs))
        else:
            text = RENDERERS[format](result)
        emit(text, output, force=force, inputs=[a, b])
