"""`kinetoscope summary TRACE`: the facts of a trace, before any judgement."""

from __future__ import annotations

from pathlib import Path

import typer
from rich.console import Console

from .. import progress
from ..analysis.summary import summarize
from ..errors import UsageError
from ..formatting.jsontext import dumps
from ..pipeline.summary_data import summary_data, summary_document
from ..report.console import output_width
from ..report.summary_view import render_summary
from ..trace import load
from ..trace.budget import MAX_MEMORY_HELP, SPILL_DIR_HELP, check_spill_dir, hold, parse_size


def register(app: typer.Typer) -> None:
    @app.command()
    def summary(
        trace_path: Path = typer.Argument(..., metavar="TRACE", help="Kineto trace file."),
        fmt: str = typer.Option("text", "--format", help="text or json."),
        max_memory: str = typer.Option("auto", "--max-memory", help=MAX_MEMORY_HELP),
        spill_dir: Path | None = typer.Option(None, "--spill-dir", help=SPILL_DIR_HELP),
    ) -> None:
        """Devices, versions, window, steps (host/device busy), top kernels and host ops."""
        if fmt not in ("text", "json"):
            raise UsageError(f"unknown --format {fmt!r}; choose text or json")
        budget = parse_size(max_memory)  # a bad size or folder is refused before any reading
        check_spill_dir(spill_dir)
        hold(budget)  # the console entry: a hard limit too
        with progress.reporting():  # a large trace says how far reading has got
            result = summarize(load(trace_path, max_memory=max_memory, spill_dir=spill_dir))
        if fmt == "json":
            typer.echo(dumps(summary_data(result), indent=2, default=str))
            return
        render_summary(summary_document(result), Console(width=output_width()))
