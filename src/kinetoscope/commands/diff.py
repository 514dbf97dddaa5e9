"""`kinetoscope diff A B`: what changed between two runs of one program, and why it matters."""

from __future__ import annotations

from pathlib import Path

import typer

from ..errors import UsageError


def register(app: typer.Typer) -> None:
    @app.command("diff")
    def diff(
        a: Path = typer.Argument(..., help="Trace of the first run (the baseline, A)."),
        b: Path = typer.Argument(..., help="Trace of the second run (B)."),
        format: str = typer.Option("text", "--format", "-f", help="text, md, json or html."),
        output: Path | None = typer.Option(
            None, "--output", "-o", help="Write to this file instead of stdout."
        ),
    ) -> None:
        """Compare two traces: per-step times, kernels, host ops, findings, and a conclusion."""
        from ..compare.diff import diff_runs
        from ..compare.render import RENDERERS, to_text
        from ..compare.runs import load_run
        from ..report.console import output_width

        if format not in RENDERERS:
            raise UsageError(f"unknown format {format!r} (choose from {', '.join(RENDERERS)})")
        result = diff_runs(load_run(a), load_run(b))
        text = (
            to_text(result, width=output_width()) if format == "text" else RENDERERS[format](result)
        )
        if output is None:
            typer.echo(text)
        else:
            output.write_text(text if text.endswith("\n") else text + "\n")
            typer.echo(f"wrote {output}")
