"""`kinetoscope table TRACE`: the profiler's statistical table from the trace alone."""

from __future__ import annotations

from pathlib import Path

import typer

from .. import progress
from ..analysis.table import SORT_KEYS, KeyAverages, key_averages
from ..errors import UsageError
from ..formatting.jsontext import dumps
from ..formatting.units import table_time
from ..pipeline.table_data import default_sort, profiler_table, table_data
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
        window: bool = typer.Option(
            False,
            "--window",
            help="Count only the active window (the profiled steps): the rows and totals "
            "summary and explain divide by. Default: the whole trace, as the profiler's table.",
        ),
    ) -> None:
        """Rebuild `key_averages().table()` (self/total CPU and device time, calls per name)."""
        if sort_by and sort_by not in SORT_KEYS:
            raise UsageError(f"unknown --sort-by {sort_by!r}; choose from {', '.join(SORT_KEYS)}")
        if fmt not in ("text", "json"):
            raise UsageError(f"unknown --format {fmt!r}; choose text or json")
        with progress.reporting():  # a large trace says how far reading has got
            trace = load(trace_path)
        if fmt == "json":
            typer.echo(dumps(table_data(trace, sort_by, row_limit, window), indent=2))
            return
        result = key_averages(trace, sort_by=sort_by or default_sort(trace), window=window)
        typer.echo(render_table(profiler_table(result, row_limit)), nl=False)
        if not window:
            typer.echo(_window_note(result, key_averages(trace, window=True)))


def _window_note(whole: KeyAverages, window: KeyAverages) -> str:
    """Where the whole trace's totals are not the active window's (events outside the
    profiled steps), say so: the shares summary and explain print divide by the window's."""
    if (whole.self_cpu_total_us, whole.self_device_total_us) == (
        window.self_cpu_total_us,
        window.self_device_total_us,
    ):
        return "Scope: whole trace = the active window (the totals summary and explain use)"
    totals = f"Self CPU {table_time(window.self_cpu_total_us)}"
    if window.has_device:
        totals += f", Self CUDA {table_time(window.self_device_total_us)}"
    return (
        f"Scope: whole trace. The active window that summary and explain count has {totals}; "
        "`--window` prints that table."
    )
