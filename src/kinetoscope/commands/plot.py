"""`kinetoscope plot TRACE -o FILE.png|svg`: the timeline and per-step bars as a picture."""

from __future__ import annotations

from pathlib import Path

import typer

from .. import progress
from ..errors import UsageError

FORMATS = (".png", ".svg", ".pdf")


def register(app: typer.Typer) -> None:
    app.command("plot")(plot_command)


def plot_command(
    trace_path: Path = typer.Argument(..., metavar="TRACE", help="Kineto trace (.json/.gz)."),
    output: Path = typer.Option(..., "-o", "--output", help="Picture to write (.png/.svg/.pdf)."),
) -> None:
    """Host and device lanes with steps marked, over a per-step bar of where time went."""
    if output.suffix.lower() not in FORMATS:
        raise UsageError(f"{output}: write a {', '.join(FORMATS)} file")
    try:
        import matplotlib
    except ImportError:
        raise UsageError("plot needs matplotlib: pip install 'kinetoscope[plot]'") from None
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from ..report.plotting import trace_figure
    from ..trace import load

    with progress.reporting():  # a large trace says how far reading has got
        trace = load(trace_path)
    if output.exists() and output.resolve() == trace_path.resolve():
        raise UsageError(f"{output}: is the input trace; choose another -o file")
    fig = trace_figure(plt, trace, trace_path.name)
    try:
        fig.savefig(output)
    except OSError as exc:
        raise UsageError(f"{output}: cannot write: {exc.strerror or exc}") from None
    finally:
        plt.close(fig)
    typer.echo(f"wrote {output}")
