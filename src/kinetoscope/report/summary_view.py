"""Render a `SummaryDocument` as rich text. The build step (`pipeline.summary_data`)
fills it from `analysis.summary`, and writes the JSON form beside it, so this module
only lays out: names come shortened, step starts relative, the host-time split worded."""

from __future__ import annotations

from rich.console import Console, Group
from rich.table import Table
from rich.text import Text

from ..formatting.units import count, fmt_bytes, fmt_pct, fmt_us
from .console import inert
from .run_text import run_line, versions_line
from .summary_model import NAME_WIDTH, RankedLine, SummaryDocument


def _device_line(device: dict) -> str:
    parts = [device["name"] or "unknown"]
    extra = []
    if device.get("sm_count"):
        extra.append(f"{device['sm_count']} {'CUs' if device.get('vendor') == 'AMD' else 'SMs'}")
    if device.get("memory_bytes"):
        extra.append(fmt_bytes(device["memory_bytes"]))
    if device.get("compute_capability"):
        extra.append(f"compute {device['compute_capability']}")
    if extra:
        parts.append(f"({', '.join(extra)})")
    return " ".join(parts)


def _ranked_table(title: str, rows: list[RankedLine], share_label: str) -> Table:
    table = Table(title=title, title_justify="left", expand=False, show_edge=False)
    table.add_column("name", overflow="fold", max_width=NAME_WIDTH)
    table.add_column("calls", justify="right")
    table.add_column("time", justify="right")
    table.add_column(share_label, justify="right")
    for r in rows:
        share = fmt_pct(r.share)
        table.add_row(Text(inert(r.name)), str(r.calls), fmt_us(r.total_us), share)
    return table


def _no_device_line(summary: SummaryDocument) -> str:
    """The device line of a run without device work: a CPU run, with the share of the window
    its math ops compute (`analysis.cpu_compute`) where it has one."""
    share = summary.metrics.get("compute_share", 0.0)
    compute = f"; compute {100 * share:.1f}% of the window" if share > 0 else ""
    return f"CPU only: no device lane{compute}"


def render_summary(summary: SummaryDocument, console: Console) -> None:
    head = Text()
    head.append("trace    ", style="bold")
    head.append(inert(summary.path) + "\n")
    devices = summary.devices
    head.append("device   ", style="bold")
    if devices:
        names = {_device_line(d) for d in devices}
        head.append(
            inert("; ".join(sorted(names))) + (f"  x{len(devices)}" if len(devices) > 1 else "")
        )
    else:
        head.append(_no_device_line(summary) if not summary.top_kernels else "unnamed")
    head.append("\n")
    if summary.versions:
        head.append("versions ", style="bold")
        head.append(inert(versions_line(summary.versions)) + "\n")
    if summary.run:
        head.append("run      ", style="bold")
        head.append(inert(run_line(summary.run)) + "\n")
    m = summary.metrics
    n_steps = int(m["steps"])
    head.append("window   ", style="bold")
    head.append(
        f"{n_steps} step(s), {fmt_us(summary.window_dur_us)}, from "
        f"{fmt_us(summary.window_start_us)} after trace start"
        if n_steps
        else f"no ProfilerStep#N: whole trace, {fmt_us(summary.window_dur_us)}"
    )
    head.append("\n")
    head.append("busy     ", style="bold")
    head.append(
        f"host {fmt_us(m['host_time_us'])} ({100 * m['host_busy_ratio']:.1f}%), "
        f"device {fmt_us(m['device_busy_us'])} ({100 * m['device_busy_ratio']:.1f}%) "
        "of the window"
    )
    head.append("\n")
    head.append("per step ", style="bold")
    head.append(
        f"median {fmt_us(summary.step_median_us)} (mean {fmt_us(summary.step_mean_us)}, "
        f"p90 {fmt_us(summary.step_p90_us)}); the window account: {summary.host_time_text}; "
        f"{count(int(m['outlier_steps']), 'step')} over {summary.outlier_factor:g}x the median"
    )
    steps = Table(title="steps", title_justify="left", show_edge=False)
    for col in (
        "step",
        "start",
        "duration",
        "host busy",
        "device busy",
        "device %",
        "kernels",
        "launches",
    ):
        steps.add_column(col, justify="right")
    for s in summary.steps:
        steps.add_row(
            s.label,
            fmt_us(s.start_us),
            fmt_us(s.dur_us),
            fmt_us(s.host_busy_us),
            fmt_us(s.device_busy_us),
            f"{100 * s.device_ratio:.1f}%",
            str(s.kernels),
            str(s.launches),
        )
    parts = [head, Text(), steps]
    if summary.trust is not None:
        grade, reasons = summary.trust
        line = inert(f"trust: {grade}" + (f" ({'; '.join(reasons)})" if reasons else ""))
        parts.insert(1, Text(line, style="green" if grade == "good" else "yellow"))
    if summary.top_kernels:
        parts += [
            Text(),
            _ranked_table(
                "top device work (active window)",
                summary.top_kernels,
                "of self device",
            ),
        ]
    if summary.top_host_ops:
        parts += [
            Text(),
            _ranked_table(
                "top host rows (active window)",
                summary.top_host_ops,
                "of self CPU",
            ),
        ]
    for warning in summary.warnings:
        parts.append(Text(inert(f"warning: {warning}"), style="yellow"))
    if summary.out_of_core:
        parts.append(Text(f"loaded {summary.out_of_core}", style="dim"))
    console.print(Group(*parts))
