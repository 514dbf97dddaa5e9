"""`kinetoscope export TRACE --format perfetto -o OUT.json[.gz]`: the trace Perfetto shows whole.

Perfetto's JSON importer drops or mis-nests complete slices that overlap partially on
one track, without a word in the UI. The export moves them to sub-tracks, clamps device
work that starts before its launch, cleans text Perfetto rejects, and adds kinetoscope's
findings and critical path as tracks (handoff/). `view` serves the same file.
"""

from __future__ import annotations

from enum import Enum
from pathlib import Path

import typer

from ..formatting.escaping import inert


class Format(str, Enum):
    perfetto = "perfetto"


def register(app: typer.Typer) -> None:
    app.command("export")(export_command)


def export_command(
    trace: Path = typer.Argument(..., metavar="TRACE", help="Kineto trace (.json or .json.gz)."),
    fmt: Format = typer.Option(Format.perfetto, "--format", "-f", help="Output format."),
    output: Path = typer.Option(
        ..., "--output", "-o", help="File to write (.json, or .json.gz to compress)."
    ),
    no_findings: bool = typer.Option(
        False, "--no-findings", help="Leave out the findings and critical-path tracks."
    ),
    force: bool = typer.Option(
        False, "--force", help="Replace the -o file if it exists (default: FILE_2, ...)."
    ),
) -> None:
    """Write TRACE for Perfetto: no slice dropped, findings and critical path as tracks."""
    from ..files.outputs import refuse_inputs, say_where

    refuse_inputs(output, [trace])  # before any work
    result = handoff(trace, output, findings=not no_findings, force=force)
    say_where(output, result.output)
    typer.echo(describe(result), err=True)


def handoff(trace: Path, output: Path, findings: bool = True, force: bool = False):
    """Export `trace` for Perfetto (with the `explain` report's tracks unless not
    `findings`); warnings go to standard error."""
    from ..handoff.export import export_perfetto

    report = None
    if findings:
        from ..api import explain

        report = explain(trace)
    result = export_perfetto(trace, output, report=report, force=force)
    for warning in result.warnings:
        typer.echo(inert(f"warning: {warning}"), err=True)
    return result


def describe(result) -> str:
    """One line: what the export changed so that Perfetto keeps every slice."""
    moved = sum(result.moved.values())
    where = ", ".join(f"{n} from {inert(name)}" for name, n in sorted(result.moved.items()))
    return (
        f"{result.slices:,} slices, none dropped: {moved:,} moved to sub-tracks"
        f"{f' ({where})' if where else ''}, {result.clamped:,} clamped to their launch; "
        f"{result.added:,} kinetoscope slices added (findings, critical path)"
    )
