"""`kinetoscope table TRACE`: the profiler's statistical table from the trace alone."""

from __future__ import annotations

from pathlib import Path

import typer

from .. import progress
from ..analysis.table import SORT_KEYS, key_averages
from ..errors import UsageError
from ..jsontext import dumps
from ..report.table_text import render_table
from ..trace import load


def register(app: typer.Typer) -> None:
    @app.command()
    def table(
        trace_path: Path = typer.Argument(..., metavar="TRACE", help="Kineto trace file."),
        sort_by: str = typer.Option(
            "",
            "--sort-by",
            help=f"Profiler sort key: {', '.join(SORT_KEYS)}. Default: "
            "self_device_time_total when the trace has device events, else self_cpu_time_total.",
        ),
        row_limit: int = typer.Option(100, "--row-limit", help="Rows to show (-1: all)."),
        fmt: str = typer.Option("text", "--format", help="text or json."),
    ) -> None:
        """Rebuild `key_averages().table()` (self/total CPU and device time, calls per name)."""
        if sort_by and sort_by not in SORT_KEYS:
            raise UsageError(f"unknown --sort-by {sort_by!r}; choose from {', '.join(SORT_KEYS)}")
        if fmt not in ("text", "json"):
            raise UsageError(f"unknown --format {fmt!r}; choose text or json")
        with progress.reporting():  # a large trace says how far reading has got
            trace = load(trace_path)
        key = sort_by or ("self_device_time_total" if trace.has_device else "self_cpu_time_total")
        result = key_averages(trace, sort_by=key)
        if fmt == "json":
            rows = result.rows if row_limit < 0 else result.rows[:row_limit]
            typer.echo(
                dumps(
                    {
                        "self_cpu_total_us": result.self_cpu_total_us,
                        "self_device_total_us": result.self_device_total_us,
                        "rows": [{**r.__dict__} for r in rows],
                    },
                    indent=2,
                )
            )
            return
        typer.echo(render_table(result, row_limit), nl=False)
