"""`kinetoscope slice TRACE (--steps 3-5 | --window START:END) -o small.json.gz`.

A smaller trace that Perfetto and kinetoscope open: the chosen steps or window,
the launches in it with their device work (even when it runs later), flows
whose both ends stay, every metadata key and event. Reads the input twice as a
stream (gzip too), in bounded memory.
"""

from __future__ import annotations

from pathlib import Path

import typer

from ..errors import UsageError, input_name
from ..formatting.escaping import inert


def register(app: typer.Typer) -> None:
    app.command("slice")(slice_command)


def slice_command(
    trace: Path = typer.Argument(
        ..., metavar="TRACE", help="Kineto trace (.json or .json.gz); - reads standard input."
    ),
    output: Path = typer.Option(
        ...,
        "--output",
        "-o",
        help="The slice to write (.json, or .json.gz to compress; - for standard output).",
    ),
    steps: str | None = typer.Option(
        None, "--steps", help="ProfilerStep numbers to keep: N or FIRST-LAST (e.g. 3-5)."
    ),
    window: str | None = typer.Option(
        None,
        "--window",
        help="START:END from the trace start as Perfetto shows it, in us (or 2ms, 1.5s); "
        "an empty side is open.",
    ),
    drop: str | None = typer.Option(
        None, "--drop", help="Comma-separated event categories to leave out (e.g. python_function)."
    ),
    force: bool = typer.Option(
        False, "--force", help="Replace the -o file if it exists (default: FILE_2, ...)."
    ),
) -> None:
    """Cut a trace down to some steps or a time window (for Perfetto, or to share)."""
    from ..files.outputs import is_stdout, say_where
    from ..slicing import Selection, parse_steps, parse_window, slice_trace

    if (steps is None) == (window is None):
        raise UsageError("give exactly one of --steps and --window")
    dropped = frozenset(c.strip() for c in (drop or "").split(",") if c.strip())
    selection = Selection(
        steps=parse_steps(steps) if steps is not None else None,
        window=parse_window(window) if window is not None else None,
        drop=dropped,
    )
    result = slice_trace(trace, selection, output, force=force)
    lo, hi = result.window_rel_us
    span = f"{lo / 1e3:.3f}-{hi / 1e3:.3f} ms" if hi != float("inf") else f"{lo / 1e3:.3f} ms-end"
    for warning in result.warnings:
        typer.echo(inert(f"warning: {warning}"), err=True)
    if result.output != output:
        say_where(output, result.output)
    aside = is_stdout(output)  # standard output holds the slice: the summary goes to stderr
    typer.echo(
        f"{inert(input_name(result.source))}: {_size(result.source_bytes)} on disk "
        f"({_size(result.source_json_bytes)} of JSON), {result.events_in:,} events",
        err=aside,
    )
    typer.echo(
        f"{inert(result.output)}: {_size(result.output_bytes)}, {result.events_out:,} events "
        f"({result.events_out / max(result.events_in, 1):.1%}); {selection.describe()}, "
        f"{span} from the trace start, steps kept: {_steps(result.steps)}",
        err=aside,
    )


def _size(n: int) -> str:
    for unit, scale in (("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if n >= scale:
            return f"{n / scale:.1f} {unit}"
    return f"{n} B"


def _steps(numbers: list[int]) -> str:
    if not numbers:
        return "none"
    return f"{numbers[0]}-{numbers[-1]}" if len(numbers) > 1 else str(numbers[0])
