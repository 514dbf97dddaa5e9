"""`kinetoscope sweep WORKLOAD --vary size=16,32,...`: profile each value, tabulate, plot.

Every value runs `kinetoscope profile` in its own subprocess, so a crash at one
size is a failed row, not a failed sweep. Options after the known ones are
passed to every `profile` run unchanged (e.g. `--device cpu --dtype fp32`).
"""

from __future__ import annotations

import sys
from pathlib import Path

import typer

from .. import progress
from ..errors import UsageError
from ..formatting.jsontext import dumps


def register(app: typer.Typer) -> None:
    @app.command(
        "sweep",
        context_settings={"allow_extra_args": True, "ignore_unknown_options": True},
    )
    def sweep(
        ctx: typer.Context,
        workload: str = typer.Argument(
            ..., metavar="WORKLOAD", help="Built-in workload, e.g. matmul_add."
        ),
        vary: str = typer.Option(..., "--vary", help="NAME=V1,V2,... e.g. size=64,128,256."),
        out: Path = typer.Option(Path("traces"), "--out", help="Folder for traces and plots."),
        timeout: float = typer.Option(600, "--timeout", help="Seconds allowed per run."),
        force: bool = typer.Option(
            False, "--force", help="Replace earlier runs' traces and plots (default: _2, ...)."
        ),
    ) -> None:
        """Profile WORKLOAD at each value; print the table and write a PNG + SVG plot.

        Any other option (e.g. --device cpu --dtype fp32 --compile) is passed
        unchanged to every `kinetoscope profile` run.
        """
        from rich.console import Console
        from rich.text import Text

        from ..capture.workloads import check_workload
        from ..compare.sweep import (
            check_fixed,
            crossover,
            format_value,
            parse_vary,
            profile_argv,
            run_point,
            sweep_dict,
        )
        from ..compare.sweep_doc import sweep_document
        from ..files.outputs import make_folder, write_text
        from ..report.sweep_render import fitted_table, table_rows

        check_workload(workload)
        param, values = parse_vary(vary)
        fixed = list(ctx.args)
        check_fixed(param, fixed)
        if force and "--force" not in fixed:
            fixed.append("--force")
        console = Console() if sys.stdout.isatty() else Console(width=120)
        points = []
        with progress.reporting():
            for k, value in enumerate(values):
                what = f"run {k + 1} of {len(values)}: {workload} {param}={format_value(value)}"
                progress.count(what, k, len(values), line=True)
                argv = profile_argv(workload, param, value, fixed, out)
                points.append(run_point(argv, value, timeout))
        if not any(p.ok for p in points):
            errors = "; ".join(f"{format_value(p.value)}: {p.error}" for p in points)
            raise UsageError(f"every run of the sweep failed ({errors})")
        cross = crossover(points)
        doc = sweep_document(param, points, cross)
        headers, rows = table_rows(doc)
        title = f"{workload}: sweep over {param}"
        table, note = fitted_table(headers, rows, title, console.width)
        console.print(table)
        if note:
            console.print(Text(f"{note} (all of them are in the sweep's .json)"))
        for p in points:
            if not p.ok:
                console.print(Text(f"{param}={format_value(p.value)} failed: {p.error}"))
        console.print(Text(f"crossover: {cross.note}"))
        stem = out / "sweeps" / f"{workload}_{param}"
        make_folder(stem.parent)
        title = f"{workload}: time per step vs {param}"
        written = plot_sweep(doc, title, stem, force)
        data = dumps(sweep_dict(workload, param, points, cross), indent=2) + "\n"
        data_path = stem.with_suffix(".json")
        written.append((data_path, write_text(data_path, data, force=force)))
        for path in (f for p in points for f in p.files):
            console.print(Text(f"wrote {path}"), soft_wrap=True)  # paths stay whole
        for wanted, path in written:
            note = f" ({wanted} exists; --force replaces it)" if path != wanted else ""
            console.print(Text(f"wrote {path}{note}"), soft_wrap=True)
        if not all(p.ok for p in points):
            raise typer.Exit(1)


def plot_sweep(doc, title: str, stem: Path, force: bool = False):
    """Write `stem`.png and `stem`.svg of the sweep's figure (report/sweep_render.py),
    never over an earlier file unless `force`; returns (wanted, written) paths."""
    from ..files.figures import save_figure
    from ..report.plotting import pyplot
    from ..report.sweep_render import sweep_figure

    plt = pyplot("sweep's plot")
    fig = sweep_figure(plt, doc, title)
    return save_figure(plt, fig, [stem.with_suffix(".png"), stem.with_suffix(".svg")], force)
