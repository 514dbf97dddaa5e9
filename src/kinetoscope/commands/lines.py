"""`kinetoscope lines TRACE`: source lines ranked by the window time they hold, split by
the window account's classes (device, Python, dispatch, waits, data, one-time).

The same data as `explain`'s `lines` section (pipeline/lines_section.py), with more rows
and the choice of every frame (`--all-frames`: torch's, the standard library's and
built-ins too) instead of the innermost user frame.
"""

from __future__ import annotations

import io
from pathlib import Path

import typer

from .. import progress
from ..errors import UsageError

FORMATS = ("text", "md", "json")


def register(app: typer.Typer) -> None:
    app.command("lines")(lines_command)


def lines_command(
    trace_path: Path = typer.Argument(..., metavar="TRACE", help="Kineto trace file."),
    all_frames: bool = typer.Option(
        False,
        "--all-frames",
        help="Attribute to the innermost frame of any code (torch, the standard library, "
        "installed packages, built-ins), not only the user's.",
    ),
    top: int = typer.Option(20, "--top", min=1, help="Lines to list."),
    fmt: str = typer.Option("text", "--format", "-f", help="text, md or json."),
) -> None:
    """Rank source lines (with_stack traces) by the window time each holds, per class."""
    from ..formatting.jsontext import dumps
    from ..pipeline.lines_section import lines_section
    from ..trace import load

    if fmt not in FORMATS:
        raise UsageError(f"unknown --format {fmt!r}; choose from {', '.join(FORMATS)}")
    with progress.reporting():  # a large trace says how far reading has got
        trace = load(trace_path)
    section = lines_section(trace, all_frames=all_frames, top=top)
    if fmt == "json":
        typer.echo(dumps({"trace": str(trace_path), "lines": section}, indent=2))
    elif fmt == "md":
        from ..report import lines_render

        typer.echo("\n".join(lines_render.markdown(section, limit=top)), nl=False)
    else:
        typer.echo(_text(section, top), nl=False)


def _text(section: dict, top: int) -> str:
    from rich.console import Console

    from ..report import lines_render

    buffer = io.StringIO()
    console = Console(file=buffer, width=100, highlight=False, soft_wrap=False)
    console.print(lines_render.rich(section, limit=top), soft_wrap=lines_render.one_line(section))
    return "\n".join(line.rstrip() for line in buffer.getvalue().splitlines()) + "\n"
