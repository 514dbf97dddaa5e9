"""`kinetoscope memory TRACE [-o memory.png]`: the allocator's story, per device.

Allocated and reserved bytes over time from `[memory]` events, the peak and the
op at it, the largest allocations, and per-step churn; `-o` draws the timeline
with steps marked (matplotlib, the optional `plot` extra, imported only then).
The build step (`pipeline/memory_data.py`) fills the document the text, the picture
(`report/memory_render.py`) and the JSON lay out.
"""

from __future__ import annotations

from pathlib import Path

import typer

from .. import progress
from ..analysis.memory import memory_timeline
from ..errors import UsageError
from ..files.figures import save_figure
from ..files.outputs import refuse_inputs, say_where
from ..formatting.jsontext import dumps
from ..pipeline.memory_data import memory_data, memory_document
from ..report.memory_render import memory_figure, render
from ..report.plotting import plot_format, pyplot
from ..rules.memory import RECORD_ADVICE
from ..trace import load


def register(app: typer.Typer) -> None:
    @app.command("memory")
    def memory(
        trace_path: Path = typer.Argument(..., metavar="TRACE", help="Kineto trace (.json/.gz)."),
        output: Path | None = typer.Option(
            None, "-o", "--output", help="Write a plot of the timeline (PNG/SVG/PDF)."
        ),
        top: int = typer.Option(10, "--top", help="How many of the largest allocations to list."),
        force: bool = typer.Option(
            False, "--force", help="Replace the -o file if it exists (default: FILE_2, ...)."
        ),
        fmt: str = typer.Option(
            "text", "--format", help="text or json (the data the MCP memory tool returns)."
        ),
    ) -> None:
        """Allocated/reserved memory over time, the peak and its op, largest allocations."""
        if fmt not in ("text", "json"):
            raise UsageError(f"unknown --format {fmt!r}; choose text or json")
        if output is not None:  # before any work: the input is never written over
            refuse_inputs(output, [trace_path])  # the worse mistake is named first
            plot_format(output)
        with progress.reporting():  # a large trace says how far reading has got
            trace = load(trace_path)
        devices = memory_timeline(trace, top=top)
        if not devices:
            raise UsageError(f"{trace_path}: no [memory] events in the trace; {RECORD_ADVICE}")
        doc = memory_document(trace, devices)
        written = None
        if output is not None:  # before printing: a missing extra fails fast
            plt = pyplot("-o")
            fig = memory_figure(plt, doc)
            [(_, written)] = save_figure(plt, fig, [output], force=force, inputs=[trace_path])
        if fmt == "json":  # every step's churn: the MCP tool cuts it to its `steps`
            typer.echo(dumps(memory_data(doc), indent=2))
        else:
            typer.echo(render(doc))
        if written is not None:
            say_where(output, written)
