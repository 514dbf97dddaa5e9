"""`kinetoscope chain TRACE [--kernel PATTERN | --op PATTERN] [--step N]`.

Prints the dispatch chain as a tree: ProfilerStep#N -> annotations -> aten ops
-> runtime calls -> the kernels they launched, with device time per node. The
chain itself is rebuilt in `analysis.chain`; this module only selects and prints
(`--format json`: the data of `pipeline.chain_data`, what the MCP `chain` tool returns).
"""

from __future__ import annotations

import numpy as np
import typer
from rich.console import Console
from rich.markup import escape
from rich.tree import Tree

from .. import progress
from ..analysis.chain import ChainNode, build_tree, select_device_events
from ..analysis.kernel_names import decode
from ..errors import UsageError
from ..formatting.jsontext import dumps
from ..formatting.units import fmt_us
from ..pipeline.chain_data import chain_data
from ..report.console import inert
from ..trace import Cat, Trace, load
from ..trace.patterns import PATTERN_HELP


def _label(trace: Trace, node: ChainNode, full_names: bool) -> str:
    i = node.index
    cat = int(trace.cat[i])
    name = trace.name(i)
    at = f"@ +{fmt_us(trace.rel(trace.ts[i]), 1)}"
    if trace.lane_kind[i] == 2:  # device event: a leaf
        shown = escape(inert(name if full_names else decode(name).short))
        return f"[bold green]{shown}[/] [dim]{at}[/] device {fmt_us(float(trace.dur[i]), 1)}"
    style = {
        int(Cat.USER_ANNOTATION): "magenta",
        int(Cat.RUNTIME): "yellow",
        int(Cat.DRIVER): "yellow",
    }.get(cat, "cyan")
    if name.startswith("ProfilerStep#"):
        style = "bold blue"
    kernels = f"{node.kernels} kernel{'s' if node.kernels != 1 else ''}"
    return (
        f"[{style}]{escape(inert(name))}[/] [dim]{at}, host {fmt_us(float(trace.dur[i]), 1)}[/] "
        f"-> {kernels}, device {fmt_us(node.device_us, 1)}"
    )


def _add(tree: Tree, trace: Trace, node: ChainNode, full_names: bool) -> None:
    for child in node.children.values():
        branch = tree.add(_label(trace, child, full_names))
        _add(branch, trace, child, full_names)


def select(trace: Trace, kernel: str | None, op: str | None, step: int | None) -> np.ndarray:
    """The device events to trace back, in time order; a usage error where none can be."""
    if kernel is not None and op is not None:
        raise UsageError("give --kernel or --op, not both")
    if not trace.device_work.any():
        raise UsageError(
            f"{trace.path}: no device activity in the trace, so no kernels to trace back"
        )
    selected = select_device_events(trace, kernel=kernel, op=op, step=step)
    if not len(selected):
        what = (
            f"kernel matching {kernel!r}"
            if kernel
            else f"op matching {op!r}"
            if op
            else "device work"
        )
        where = f" in ProfilerStep#{step}" if step is not None else ""
        raise UsageError(inert(f"no {what}{where} in {trace.path}"))
    return selected


def render_chain(
    trace: Trace,
    kernel: str | None,
    op: str | None,
    step: int | None,
    limit: int,
    full_names: bool = False,
) -> tuple[Tree, int, int]:
    """The tree for the selection, with (kernels shown, kernels matched)."""
    selected = select(trace, kernel, op, step)
    shown = selected[:limit]
    root = build_tree(trace, shown)
    title = (
        f"[bold]dispatch chain[/] of {len(shown)} of {len(selected)} matching device event(s), "
        f"device {fmt_us(root.device_us, 1)}"
    )
    tree = Tree(title)
    _add(tree, trace, root, full_names)
    return tree, len(shown), len(selected)


def register(app: typer.Typer) -> None:
    @app.command("chain")
    def chain(
        trace_path: str = typer.Argument(..., metavar="TRACE", help="Kineto trace (.json[.gz])."),
        kernel: str = typer.Option(None, "--kernel", help=PATTERN_HELP.format("kernel names")),
        op: str = typer.Option(None, "--op", help=PATTERN_HELP.format("host op names")),
        step: int = typer.Option(None, "--step", help="Only work launched in ProfilerStep#N."),
        limit: int = typer.Option(20, "--limit", min=1, help="Kernels to show (first in time)."),
        full_names: bool = typer.Option(False, "--full-names", help="Do not shorten kernel names."),
        fmt: str = typer.Option(
            "text", "--format", help="text or json (the tree the MCP chain tool returns)."
        ),
    ) -> None:
        """Show how kernels were dispatched: step -> annotation -> aten op -> launch -> kernel."""
        if fmt not in ("text", "json"):
            raise UsageError(f"unknown --format {fmt!r}; choose text or json")
        with progress.reporting():  # a large trace says how far reading has got
            trace = load(trace_path)
        if fmt == "json":
            typer.echo(dumps(chain_data(trace, select(trace, kernel, op, step), limit), indent=2))
            return
        tree, shown, matched = render_chain(trace, kernel, op, step, limit, full_names)
        console = Console()
        console.print(tree)
        if matched > shown:
            console.print(f"[dim]{matched - shown} more not shown (use --limit or --step)[/]")
