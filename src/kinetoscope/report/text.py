"""Terminal rendering of a `Report` with rich: verdict, steps, findings, not checked.

Laid out for a 100-column terminal: tables fold long names, explanations wrap
under their finding, evidence lines are indented bullets. Every string that can
come from the trace (path, names, devices, labels, warnings) passes `inert`
first: a kernel name holding ESC must print as text, not recolour the terminal.
"""

from __future__ import annotations

import io

from rich.console import Console, Group
from rich.padding import Padding
from rich.table import Table
from rich.text import Text

from ..formatting.units import fmt_us
from ..rules.base import Evidence, Finding
from . import comm_render, kernels_render, lines_render, llm_render, modules_render, moe_render
from .console import inert
from .evidence import evidence_line
from .model import Report
from .phrases import (
    account_line,
    device_cell,
    path_line,
    path_rows,
    step_counts,
    steps_line,
)
from .run_text import run_line, version_parts

#: Steps listed before the table is cut (outliers are always listed).
MAX_STEP_ROWS = 12
SEVERITY_STYLE = {"critical": "bold red", "warn": "yellow", "info": "cyan"}
REGIME_STYLE = {
    "overhead-bound": "bold yellow",
    "compute-bound": "bold green",
    "mixed": "bold cyan",
    "host-only": "bold magenta",
    "cold-window": "bold blue",
    "compile-window": "bold blue",
    "not-judged": "bold red",
}


def render_text(report: Report, width: int = 100, color: bool = False) -> str:
    buffer = io.StringIO()
    console = Console(
        file=buffer,
        width=width,
        force_terminal=color,
        color_system="standard" if color else None,
        highlight=False,
        soft_wrap=False,
    )
    print_report(report, console)
    return "\n".join(line.rstrip() for line in buffer.getvalue().splitlines()) + "\n"


def print_report(report: Report, console: Console) -> None:
    console.print(_header(report))
    console.print()
    console.print(_verdict(report))
    console.print(_quality(report))
    if report.critical_path.get("parts"):
        console.print()
        console.print(_path(report))
    console.print()
    console.print(_steps(report))
    if report.kernel_types.get("types"):
        console.print()
        console.print(_kernel_types(report))
    if report.communication:
        console.print()
        console.print(_communication(report))
    if report.llm:
        console.print()
        console.print(_llm(report))
    if report.moe:
        console.print()
        console.print(_moe(report))
    if report.modules:
        console.print()
        console.print(modules_render.text_group(report.modules))
    if report.kernels:
        console.print()
        console.print(_kernels(report))
    if report.lines:
        console.print()
        console.print(
            lines_render.rich(report.lines), soft_wrap=lines_render.one_line(report.lines)
        )
    console.print()
    console.print(_findings(report))
    if report.not_checked:
        console.print()
        console.print(_not_checked(report))


def _hanging(label: Text | str, *lines: Text | str) -> Table:
    """`label` in a left column, `lines` beside it: wrapped lines stay indented."""
    grid = Table.grid(padding=(0, 1, 0, 0))
    grid.add_column(no_wrap=True)
    grid.add_column(overflow="fold")
    for k, line in enumerate(lines):
        grid.add_row(label if k == 0 else "", line)
    return grid


def _header(report: Report) -> Table:
    t = report.trace
    names = sorted({inert(str(d["name"])) for d in t.devices if d.get("name")})
    run = [", ".join(names) if names else "no device properties"]
    run.extend(inert(part) for part in version_parts(t.versions))
    if t.rank is not None:
        run.append(f"rank {t.rank}")
    window = (
        f"window {fmt_us(t.window['dur_us'])} ({step_counts(report)}) "
        f"from +{fmt_us(t.window['start_us'])}, {t.events} events"
    )
    lines: list[Text | str] = [Text(inert(t.path)), Text(" | ".join(run), style="dim")]
    lines.append(Text(window, style="dim"))
    if t.run:
        lines.append(Text("recorded by kinetoscope: " + inert(run_line(t.run)), style="dim"))
    lines.extend(Text(f"warning: {inert(w)}", style="yellow") for w in t.warnings)
    if t.out_of_core:
        lines.append(Text(f"loaded {t.out_of_core}", style="dim"))
    return _hanging(Text("Trace", style="bold"), *lines)


def _verdict(report: Report) -> Table:
    v = report.verdict
    line = Text(v.regime.upper(), style=REGIME_STYLE.get(v.regime, "bold"))
    line.append("  " + inert(v.summary.split(": ", 1)[-1]), style="")
    return _hanging(Text("Verdict", style="bold"), line)


def _path(report: Report) -> Table:
    """The window account in one line, then the critical path's largest parts."""
    per_step = bool(report.trace.window.get("steps"))
    lines = [Text(inert(account_line(report)), style="dim")]
    lines += [Text(inert(path_line(row, per_step))) for row in path_rows(report)]
    return _hanging(Text("Path", style="bold"), *lines)


def _quality(report: Report) -> Table:
    """The trust grade beside the verdict: when not to believe the numbers."""
    q = report.quality
    style = {"good": "green", "caution": "yellow", "poor": "bold red"}.get(q.get("grade"), "")
    line = Text(str(q.get("grade", "unknown")), style=style)
    if q.get("reasons"):
        line.append("  " + "; ".join(q["reasons"]), style="")
    return _hanging(Text("Trust", style="bold"), line)


def _kernel_types(report: Report) -> Group:
    """Device time by kernel type; communication overlap where there is any."""
    kt = report.kernel_types
    table = Table(box=None, pad_edge=False, header_style="dim", padding=(0, 1))
    for name, justify in (("type", "left"), ("events", "right"), ("per step", "right")):
        table.add_column(name, justify=justify, no_wrap=True)
    table.add_column("share", justify="right")
    for row in kt["types"]:
        table.add_row(
            row["type"], str(row["events"]), fmt_us(row["per_step_us"]), f"{row['share']:.1%}"
        )
    parts: list = [Text("Device time by kernel type", style="bold"), table]
    streams = report.streams
    if streams.get("communication_us"):
        parts.append(
            Text(
                f"communication {fmt_us(streams['communication_us'])}: "
                f"{streams['hidden_share']:.0%} hidden under compute, "
                f"{fmt_us(streams['exposed_us'])} exposed",
                style="dim",
            )
        )
    return Group(*parts)


def _communication(report: Report) -> Group:
    """Every collective by family and kind: one line per family, then one per collective
    (a sentence: thirteen columns do not fit a terminal)."""
    comm = report.communication
    parts: list = [Text("Communication", style="bold")]
    parts += [Text(inert(line), style="dim") for line in comm_render.family_lines(comm)]
    parts += [_hanging("-", Text(inert(comm_render.row_line(row)))) for row in comm["collectives"]]
    parts.append(Text(comm_render.NOTE, style="dim"))
    return Group(*parts)


def _llm(report: Report) -> Group:
    """Passes of a generation: per-phase totals, TTFT, TPOT, then one row per pass."""
    llm = report.llm
    phases = Table(box=None, pad_edge=False, header_style="dim", padding=(0, 1))
    for name in llm_render.PHASE_COLUMNS:
        phases.add_column(name, justify="left" if name == "phase" else "right")
    for row in llm_render.phase_rows(llm):
        phases.add_row(*row)
    table = Table(box=None, pad_edge=False, header_style="dim", padding=(0, 1))
    for name in llm_render.PASS_COLUMNS:
        table.add_column(
            name,
            justify="left" if name in ("pass", "phase") else "right",
            no_wrap=name == llm_render.SPLIT_COLUMN,
        )
    for p in llm["passes"][:MAX_STEP_ROWS]:
        label, *cells = llm_render.pass_row(p)
        table.add_row(Text(inert(label[:32])), *cells)
    parts: list = [
        Text("LLM phases", style="bold"),
        Text("; ".join(llm_render.summary(llm)), style="dim"),
        Text(inert(llm_render.phases_from(llm)), style="dim"),
        phases,
        table,
    ]
    if len(llm["passes"]) > MAX_STEP_ROWS:
        more = len(llm["passes"]) - MAX_STEP_ROWS
        parts.append(Text(f"... {more} more passes (see --format json)"))
    return Group(*parts)


def _kernels(report: Report) -> Group:
    """The kernel view: Tensor Core share, fp32 without TF32, occupancy, per kernel."""
    k = report.kernels
    columns = kernels_render.TEXT_COLUMNS
    parts = _titled_table(
        "Kernels",
        kernels_render.summary(k),
        columns,
        ["right" if 0 < i < 6 else "left" for i in range(len(columns))],
        kernels_render.text_rows(k),
    )
    if kernels_render.more(k):
        parts.append(Text(f"... {kernels_render.more(k)} more kernels (see --format json)"))
    return Group(*parts)


def _titled_table(title: str, summary: list[str], columns, justify: list[str], rows) -> list:
    """A section's bold title, its dim summary lines and its table of escaped cells."""
    parts: list = [Text(title, style="bold")]
    parts += [Text(inert(line), style="dim") for line in summary]
    table = Table(box=None, pad_edge=False, header_style="dim", padding=(0, 1))
    for name, side in zip(columns, justify, strict=True):
        table.add_column(name, justify=side, overflow="fold")
    for row in rows:
        table.add_row(*(Text(inert(cell)) for cell in row))
    parts.append(table)
    return parts


def _moe(report: Report) -> Group:
    """Mixture of experts: dispatch and its evidence, time per part, layers."""
    moe = report.moe
    columns = moe_render.PART_COLUMNS
    parts = _titled_table(
        "Mixture of experts",
        moe_render.summary(moe),
        columns,
        ["left" if k < 2 else "right" for k in range(len(columns))],
        moe_render.part_rows(moe),
    )
    layers = moe["layers"]
    if layers:
        grid = Table(box=None, pad_edge=False, header_style="dim", padding=(0, 1))
        for k, name in enumerate(moe_render.LAYER_COLUMNS):
            grid.add_column(name, justify="left" if k < 2 else "right")
        for layer in layers[: moe_render.MAX_LAYERS]:
            grid.add_row(*moe_render.layer_row(layer))
        parts.append(grid)
        if len(layers) > moe_render.MAX_LAYERS:
            more = len(layers) - moe_render.MAX_LAYERS
            parts.append(Text(f"... {more} more layers (see --format json)"))
    return Group(*parts)


def _steps(report: Report) -> Group:
    title = Text("Steps", style="bold")
    table = Table(box=None, pad_edge=False, header_style="dim", padding=(0, 1))
    table.add_column("step", no_wrap=True)
    table.add_column("starts at", justify="right", no_wrap=True)
    table.add_column("duration", justify="right", no_wrap=True)
    table.add_column("host busy", justify="right", no_wrap=True)
    table.add_column("device busy", justify="right", no_wrap=True)
    table.add_column("kernels", justify="right")
    table.add_column("launches", justify="right")
    table.add_column("", overflow="fold")
    rows = report.steps
    shown = [r for i, r in enumerate(rows) if i < MAX_STEP_ROWS or r.outlier]
    for row in shown:
        flag = Text(f"<- {inert(row.outlier)}", style="yellow") if row.outlier else Text("")
        table.add_row(
            Text(inert(row.label)),
            f"+{fmt_us(row.start_us)}",
            fmt_us(row.dur_us),
            fmt_us(row.host_busy_us),
            device_cell(report, row),
            str(row.kernels),
            str(row.launches),
            flag,
        )
    parts = [title, table]
    if len(shown) < len(rows):
        parts.append(Text(f"... {len(rows) - len(shown)} more steps (see --format json)"))
    parts.append(Text(steps_line(report), style="dim"))
    return Group(*parts)


def _findings(report: Report) -> Group:
    if not report.findings:
        return Group(Text("Findings", style="bold"), Text("  none: no rule fired"))
    per = "/step" if report.trace.window["steps"] else " over the trace"
    unit = "per step" if per == "/step" else "over the trace"
    parts = [Text(f"Findings (ranked by the time a fix could save {unit})", style="bold")]
    for number, finding in enumerate(report.findings, 1):
        parts.append(Text())
        parts.append(_finding(number, finding, per))
    return Group(*parts)


def _finding(number: int, f: Finding, per: str) -> Group:
    head = Text(f"{number}. ")
    head.append(f"[{f.severity}]", style=SEVERITY_STYLE.get(f.severity, ""))
    head.append(f" {f.id}", style="bold")
    if f.impact_us > 0:
        head.append(f"  ~{fmt_us(f.impact_us)}{per}", style="dim")
    body = [Text(inert(f.title), style="bold"), Text(inert(f.explanation))]
    body.append(Text.assemble(("Try: ", "green"), inert(f.suggestion)))
    if f.evidence:
        body.append(Text("Evidence:", style="dim"))
        body.extend(Padding(_hanging("-", _evidence(e)), (0, 0, 0, 2)) for e in f.evidence)
    return Group(head, Padding(Group(*body), (0, 0, 0, 3)))


def _evidence(e: Evidence) -> Text:
    line = evidence_line(e)
    text = Text()
    if line.name:
        text.append(inert(line.name), style="bold")
        text.append(": ")
    text.append(inert(line.text))
    if line.where:
        text.append(f" ({inert(line.where)})", style="dim")
    return text


def _not_checked(report: Report) -> Group:
    parts = [Text("Not checked", style="bold")]
    for ids, reason, advice in report.skipped_groups():
        line = Text(", ".join(ids), style="bold")
        line.append(f": {inert(reason)}")
        if advice:
            line.append(f"; {inert(advice)}", style="dim")
        parts.append(Padding(_hanging("-", line), (0, 0, 0, 2)))
    return Group(*parts)
