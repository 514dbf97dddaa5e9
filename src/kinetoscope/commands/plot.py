"""`kinetoscope plot TRACE -o FILE.png|svg`: the timeline and per-step bars as a picture."""

from __future__ import annotations

from pathlib import Path

import typer

from .. import progress


def register(app: typer.Typer) -> None:
    app.command("plot")(plot_command)


def plot_command(
    trace_path: Path = typer.Argument(..., metavar="TRACE", help="Kineto trace (.json/.gz)."),
    output: Path = typer.Option(..., "-o", "--output", help="Picture to write (.png/.svg/.pdf)."),
    force: bool = typer.Option(
        False, "--force", help="Replace the -o file if it exists (default: FILE_2, ...)."
    ),
) -> None:
    """Host and device lanes with steps marked, over a per-step bar of where time went."""
    from ..files.figures import save_figure
    from ..files.outputs import refuse_inputs, say_where
    from ..pipeline.plot_data import trace_plot
    from ..report.plotting import plot_format, pyplot, trace_figure
    from ..trace import load

    # before any work: an input, a bad name or no matplotlib fail fast (the input first)
    refuse_inputs(output, [trace_path])
    plot_format(output)
    plt = pyplot("plot")
    with progress.reporting():  # a large trace says how far reading has got
        trace = load(trace_path)
    figure = trace_figure(plt, trace_plot(trace, trace_path.name))
    [(_, written)] = save_figure(plt, figure, [output], force=force, inputs=[trace_path])
    say_where(output, written)
