"""`kinetoscope explain TRACE`: verdict, steps, ranked findings, what was not checked.

Several files or a directory go to the multi-rank analysis instead.
"""

from __future__ import annotations

import sys
from enum import Enum
from pathlib import Path

import typer

from .. import progress
from ..errors import UsageError
from ..trace.budget import MAX_MEMORY_HELP, SPILL_DIR_HELP, check_spill_dir, hold, parse_size


class Format(str, Enum):
    text = "text"
    md = "md"
    json = "json"
    html = "html"


def register(app: typer.Typer) -> None:
    app.command("explain")(explain_command)


def explain_command(
    traces: list[Path] = typer.Argument(
        ...,
        metavar="TRACE|DIR",
        help="A trace file; several, or a folder: the ranks of one job, else each alone.",
    ),
    fmt: Format = typer.Option(Format.text, "--format", "-f", help="Output format."),
    output: Path | None = typer.Option(None, "--output", "-o", help="Write to FILE."),
    force: bool = typer.Option(
        False, "--force", help="Replace FILE if it exists (default: write FILE_2, ...)."
    ),
    rules: str | None = typer.Option(
        None, "--rules", help="Comma-separated rule ids to run (default: all)."
    ),
    config: Path | None = typer.Option(None, "--config", help="TOML file of rule thresholds."),
    sets: list[str] = typer.Option(
        [], "--set", help="Override a threshold: rule.key=value (repeatable)."
    ),
    jobs: int = typer.Option(1, "--jobs", "-j", min=1, help="Processes for multi-rank traces."),
    executor: str = typer.Option(
        "local", "--executor", help="Where multi-rank traces are read: local, dask or ray."
    ),
    address: str | None = typer.Option(
        None, "--address", help="Scheduler (dask) or cluster (ray) address; default: local."
    ),
    max_memory: str = typer.Option("auto", "--max-memory", help=MAX_MEMORY_HELP),
    spill_dir: Path | None = typer.Option(None, "--spill-dir", help=SPILL_DIR_HELP),
    list_rules: bool = typer.Option(
        False,
        "--list-rules",
        is_eager=True,
        callback=lambda value: _print_rules() if value else None,
        help="List the rules, their families and thresholds, and exit.",
    ),
) -> None:
    """Read a trace like an expert: regime, per-step table, findings with evidence."""
    from ..files.outputs import emit, is_stdout, refuse_inputs
    from ..rules.config import apply_sets, check_rule_ids, load_config

    if output is not None:  # before any work: the inputs are never written over
        refuse_inputs(output, [*traces, *([config] if config is not None else [])])
    thresholds = load_config(config) if config is not None else {}
    thresholds = apply_sets(thresholds, sets)
    only = check_rule_ids(rules.split(",")) if rules is not None else None
    budget = parse_size(max_memory)  # a bad size or folder is refused before any reading
    check_spill_dir(spill_dir)
    hold(budget)  # the console entry: a hard limit too
    paths = _expand(traces)
    if output is not None:
        refuse_inputs(output, paths)
    to_terminal = output is None or is_stdout(output)
    with progress.reporting():  # a large trace says how far reading has got
        if len(paths) > 1:
            ranks = (jobs, executor, address)
            text = _multirank(paths, ranks, thresholds, only, fmt, color=to_terminal)
        else:
            loading = {"max_memory": max_memory, "spill_dir": spill_dir}
            text = _single(paths[0], thresholds, only, fmt, loading, color=to_terminal)
    emit(text, output, force=force, inputs=paths)


def _print_rules() -> None:
    from ..rules.engine import load_rules

    for rule in load_rules().values():
        keys = ", ".join(f"{k}={v:g}" for k, v in rule.defaults.items()) or "-"
        print(f"{rule.id:24} {rule.family:16} {keys}\n{'':24} {rule.summary}")
    raise typer.Exit(0)


def _expand(traces: list[Path]) -> list[Path]:
    """Files as given; a directory becomes the trace files directly inside it, less the
    reports kinetoscope wrote there itself (recognised by content)."""
    from ..files.own_files import is_kinetoscope_report

    paths: list[Path] = []
    for path in traces:
        if path.is_dir():
            found = sorted(
                p
                for p in path.iterdir()
                if p.is_file()
                and p.name.endswith((".json", ".json.gz"))
                and not is_kinetoscope_report(p)
            )
            if not found:
                raise UsageError(f"{path}: directory holds no .json or .json.gz trace files")
            paths.extend(found)
        else:
            paths.append(path)
    return paths


def _single(path: Path, thresholds, only, fmt: Format, loading: dict, color: bool) -> str:
    from ..api import explain

    report = explain(path, thresholds, only, **loading)
    if fmt is Format.json:
        return report.to_json() + "\n"
    if fmt is Format.md:
        from ..report.markdown import render_markdown

        return render_markdown(report)
    if fmt is Format.html:
        from ..report.html import render_html

        return render_html(report)
    from ..report.console import output_width
    from ..report.text import render_text

    return render_text(report, width=output_width(), color=color and sys.stdout.isatty())


def _each_alone(paths: list[Path], why: str, thresholds, only, fmt: Format, color: bool) -> str:
    """Traces that are not ranks of one job: one line saying so, then each report alone
    (text and markdown; a JSON or HTML file holds one report, so those say why not)."""
    from ..report.console import inert

    if fmt in (Format.json, Format.html):
        raise UsageError(f"{why}; --format {fmt.value} holds one report: explain them one by one")
    loading = {"max_memory": "auto", "spill_dir": None}
    rule = "## " if fmt is Format.md else "=== "
    parts = [f"{inert(why)}: each is explained alone.\n"]
    for path in paths:
        parts.append(f"\n{rule}{inert(str(path))}\n\n")
        parts.append(_single(path, thresholds, only, fmt, loading, color))
    return "".join(parts)


def _multirank(paths: list[Path], ranks: tuple, thresholds, only, fmt: Format, color: bool):
    """The multi-rank report where the traces are ranks of one job, else each alone."""
    jobs, executor, address = ranks
    try:
        from ..ranks.multirank import NotRanks, explain_ranks
    except ImportError:
        raise UsageError(
            f"multi-rank analysis is not available ({len(paths)} traces given; "
            "explain one file at a time)"
        ) from None
    try:
        return explain_ranks(
            paths, jobs=jobs, config=thresholds, fmt=fmt.value, executor=executor, address=address
        )
    except NotRanks as exc:
        return _each_alone(paths, str(exc), thresholds, only, fmt, color)
