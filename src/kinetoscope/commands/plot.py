"""`kinetoscope plot TRACE -o FILE.png|svg`: the timeline and per-step bars as a picture."""

from __future__ import annotations

from pathlib import Path

import typer

from .. import progress
from ..formatting.escaping import inert


def register(app: typer.Typer) -> None:
    app.command("plot")(plot_command)


def plot_command(
    trace_path: Path = typer.Argument(..., metavar="TRACE", help="Kineto trace (.json/.gz)."),
    output: Path = typer.Option(..., "-o", "--output", help="Picture to write (.png/.svg/.pdf)."),
) -> None:
    """Host and device lanes with steps marked, over a per-step bar of where time went."""
    from ..files.figures import save_figure
    from ..files.outputs import refuse_inputs
    from ..pipeline.plot_data import trace_plot
    from ..report.plotting import plot_format, pyplot, trace_figure
    from ..trace import load

    # before any work: an input, a bad name or no matplotlib fail fast (the input first)
    refuse_inputs(output, [trace_path])
    plot_format(output)
    plt = pyplot("plot")
    with progress.reporting():  # a large trace says how far reading has got
        trace = load(trace_path)
    # replaces an existing picture, as it always has, but whole (temp file + rename)
    save_figure(plt, trace_figure(plt, trace_plot(trace, trace_path.name)), [output], force=True)
    typer.echo(inert(f"wrote {output}"))
