"""`kinetoscope memory TRACE [-o memory.png]`: the allocator's story, per device.

Allocated and reserved bytes over time from `[memory]` events, the peak and the
op at it, the largest allocations, and per-step churn; `-o` draws the timeline
with steps marked (matplotlib, the optional `plot` extra, imported only then).
"""

from __future__ import annotations

from pathlib import Path

import typer

from .. import progress
from ..analysis.memory import DeviceMemory, memory_timeline, op_label
from ..errors import UsageError
from ..files.outputs import refuse_inputs, say_where, write_file
from ..formatting.escaping import inert
from ..formatting.jsontext import dumps
from ..formatting.units import fmt_us
from ..pipeline.memory_data import memory_data
from ..rules.memory import RECORD_ADVICE, fmt_bytes
from ..trace import Trace, load

#: Panels of devices whose bytes stay under this share of the largest device's are left out.
SMALL_PANEL = 0.01


def register(app: typer.Typer) -> None:
    @app.command("memory")
    def memory(
        trace_path: Path = typer.Argument(..., metavar="TRACE", help="Kineto trace (.json/.gz)."),
        output: Path | None = typer.Option(
            None, "-o", "--output", help="Write a plot of the timeline (PNG/SVG/PDF)."
        ),
        top: int = typer.Option(10, "--top", help="How many of the largest allocations to list."),
        force: bool = typer.Option(
            False, "--force", help="Replace the -o file if it exists (default: FILE_2, ...)."
        ),
        fmt: str = typer.Option(
            "text", "--format", help="text or json (the data the MCP memory tool returns)."
        ),
    ) -> None:
        """Allocated/reserved memory over time, the peak and its op, largest allocations."""
        if fmt not in ("text", "json"):
            raise UsageError(f"unknown --format {fmt!r}; choose text or json")
        if output is not None:  # before any work: the input is never written over
            refuse_inputs(output, [trace_path])
        with progress.reporting():  # a large trace says how far reading has got
            trace = load(trace_path)
        devices = memory_timeline(trace, top=top)
        if not devices:
            raise UsageError(f"{trace_path}: no [memory] events in the trace; {RECORD_ADVICE}")
        written = None
        if output is not None:  # before printing: a missing extra fails fast
            written = plot(trace, devices, output, force=force, inputs=[trace_path])
        if fmt == "json":  # every step's churn: the MCP tool cuts it to its `steps`
            typer.echo(dumps(memory_data(trace, devices), indent=2))
        else:
            typer.echo(render(trace, devices))
        if written is not None:
            say_where(output, written)


def render(trace: Trace, devices: list[DeviceMemory]) -> str:
    lines = [f"{inert(trace.path)}: {sum(d.events for d in devices)} [memory] events"]
    for d in devices:
        lines.append("")
        note = " (allocated rebuilt from the byte counts: relative to recording start)"
        lines.append(f"{inert(d.device)}: {d.events} events{note if d.relative else ''}")
        lines.append(
            f"  peak allocated {fmt_bytes(d.peak_bytes)} at {_ms(trace.rel(d.peak.ts))}"
            f"{_step(d.peak.step)}, right after {fmt_bytes(d.peak.nbytes)} for "
            f"{inert(op_label(trace, d.peak.op))}"
        )
        if d.reserved is not None:
            lines.append(f"  peak reserved  {fmt_bytes(float(d.reserved.max()))}")
        if d.largest:
            lines.append("  largest allocations:")
            for a in d.largest:
                lines.append(
                    f"    {fmt_bytes(a.nbytes):>11}  at {_ms(trace.rel(a.ts)):>12}"
                    f"{_step(a.step):<12}  {inert(op_label(trace, a.op))}"
                )
        if d.churn:
            lines.append("  per-step churn:")
            lines.append(
                f"    {'step':>6} {'allocated':>12} {'freed':>12} {'net':>12} {'peak':>12}"
                f"{'  reserved +/-' if d.reserved is not None else ''}"
            )
            for c in d.churn:
                reserved = ""
                if d.reserved is not None:
                    grown, released = c.reserved_grown_bytes, c.reserved_released_bytes
                    reserved = f"  +{fmt_bytes(grown)} / -{fmt_bytes(released)}"
                lines.append(
                    f"    {'#' + str(c.step):>6} {fmt_bytes(c.allocated_bytes):>12} "
                    f"{fmt_bytes(c.freed_bytes):>12} {fmt_bytes(c.net_bytes):>12} "
                    f"{fmt_bytes(c.peak_bytes):>12}{reserved}"
                )
    return "\n".join(lines)


#: Formats matplotlib writes, by the -o file's extension.
PLOT_FORMATS = ("png", "svg", "pdf")


def plot(
    trace: Trace, devices: list[DeviceMemory], output: Path, force: bool = False, inputs=()
) -> Path:
    """Draw the timeline into `output` (written safely, see `outputs`); returns where it went."""
    fmt = output.suffix.lstrip(".").lower()
    if fmt not in PLOT_FORMATS:
        raise UsageError(f"{output}: the plot is written as {', '.join(PLOT_FORMATS)}; name it so")
    try:
        import matplotlib
    except ImportError:
        raise UsageError("-o needs matplotlib: pip install 'kinetoscope[plot]'") from None
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig = memory_figure(plt, trace, devices)
    try:
        return write_file(
            output, lambda f: fig.savefig(f, format=fmt, dpi=110), force=force, inputs=inputs
        )
    finally:
        plt.close(fig)


def memory_figure(plt, trace: Trace, devices: list[DeviceMemory]):
    """A panel per device holding a visible share of the bytes, one byte unit for all,
    y from 0, one shared time axis (panels line up), steps shaded."""
    # a device holding under 1% of the largest one's bytes (often the CPU: a few hundred
    # bytes next to GiB) is a flat line at 0 in the shared unit: named in the title instead
    largest = max(_top(d) for d in devices)
    shown = [d for d in devices if _top(d) >= SMALL_PANEL * largest] or devices
    left_out = [d for d in devices if all(d is not s for s in shown)]
    from ..report.plotting import byte_scale, time_scale

    scale, unit = byte_scale(max(_top(d) for d in shown))
    per, t_unit = time_scale(trace.end_time - trace.start_time)
    fig, axes = plt.subplots(
        len(shown), 1, figsize=(11, 3.2 * len(shown)), squeeze=False, sharex=True
    )
    for ax, d in zip(axes[:, 0], shown, strict=True):
        t_ms = (d.ts - trace.start_time) / 1e3
        ax.step(t_ms, d.allocated / scale, where="post", label="allocated", lw=1)
        if d.reserved is not None:
            ax.step(t_ms, d.reserved / scale, where="post", label="reserved", lw=1)
        for k, s in enumerate(trace.steps):
            ax.axvspan(
                trace.rel(s.start) / 1e3,
                trace.rel(s.end) / 1e3,
                color="0.9" if k % 2 == 0 else "0.95",
                zorder=0,
            )
            x = trace.rel(s.start) / 1e3
            ax.text(x, 1.0, f"#{s.number}", transform=ax.get_xaxis_transform(), fontsize=7)
        peak_ms = trace.rel(d.peak.ts) / 1e3
        ax.plot([peak_ms], [d.peak_bytes / scale], "v", color="C3")
        right_half = peak_ms > (float(t_ms.min()) + float(t_ms.max())) / 2
        ax.annotate(
            f"peak {fmt_bytes(d.peak_bytes)}: {inert(op_label(trace, d.peak.op))}",
            (peak_ms, d.peak_bytes / scale),
            textcoords="offset points",
            xytext=(-8 if right_half else 8, -4),
            ha="right" if right_half else "left",
            va="top",
            fontsize=8,
        )
        # relative counts (rebuilt from byte deltas) can dip below their start
        low = min(0.0, float(d.allocated.min()) / scale)
        ax.set_ylim(bottom=low, top=max(_top(d) / scale * 1.08, 1e-9))
        rel = " (relative)" if d.relative else ""
        ax.set_ylabel(f"{inert(d.device)} {unit}{rel}")
        ax.legend(loc="lower right", fontsize=8)
    axes[-1, 0].set_xlabel("time since trace start (ms)")
    note = "; ".join(f"{d.device}: peak {fmt_bytes(d.peak_bytes)}, not drawn" for d in left_out)
    fig.suptitle(inert(Path(trace.path).name + (f" ({note})" if note else "")), fontsize=9)
    fig.tight_layout()
    return fig


def _top(d: DeviceMemory) -> float:
    """Highest byte count a panel shows (allocated or reserved)."""
    reserved = float(d.reserved.max()) if d.reserved is not None else 0.0
    return max(float(d.allocated.max()), reserved, 0.0)


def _ms(us: float) -> str:
    """A time in the shared format (3 significant digits, unit chosen)."""
    return fmt_us(us)


def _step(step: int | None) -> str:
    return f" (step #{step})" if step is not None else ""
