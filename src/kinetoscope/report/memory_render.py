"""`kinetoscope memory` as text and as a picture: per device, the peak and the op at
it, the largest allocations and per-step churn (tables on `report.tables`), and the
allocated/reserved timeline with steps marked (`report.plotting` set-up; the
command writes it).

Renders only: it lays out a `MemoryDocument` (`report.memory_model`), which the build
step (`pipeline.memory_data`) fills with op labels and times relative to the trace
start, so nothing here reads a Trace.
"""

from __future__ import annotations

from pathlib import Path

from ..formatting.escaping import inert
from ..formatting.units import fmt_us
from ..rules.memory import fmt_bytes
from .memory_model import MemoryDevice, MemoryDocument
from .plotting import DPI, byte_scale
from .tables import table_text, text_table

#: Panels of devices whose bytes stay under this share of the largest device's are left out.
SMALL_PANEL = 0.01


def render(doc: MemoryDocument) -> str:
    lines = [f"{inert(doc.path)}: {doc.events} [memory] events"]
    for d in doc.devices:
        lines.append("")
        note = " (allocated rebuilt from the byte counts: relative to recording start)"
        lines.append(f"{inert(d.device)}: {d.events} events{note if d.relative else ''}")
        lines.append(
            f"  peak allocated {fmt_bytes(d.peak_bytes)} at {_ms(d.peak.at_us)}"
            f"{_step(d.peak.step)}, right after {fmt_bytes(d.peak.nbytes)} for "
            f"{inert(d.peak.op)}"
        )
        if d.peak_reserved_bytes is not None:
            lines.append(f"  peak reserved  {fmt_bytes(d.peak_reserved_bytes)}")
        if d.largest:
            lines.append("  largest allocations:")
            rows = [[a.op, fmt_bytes(a.nbytes), _ms(a.at_us), _number(a.step)] for a in d.largest]
            lines += _indented(["op", "bytes", "at", "step"], rows)
        if d.churn:
            lines.append("  per-step churn:")
            head = ["step", "allocated", "freed", "net", "peak"]
            head += ["reserved +/-"] if d.reserved is not None else []
            rows = []
            for c in d.churn:
                row = [_number(c.step)]
                row += [fmt_bytes(x) for x in (c.allocated_bytes, c.freed_bytes, c.net_bytes,
                                               c.peak_bytes)]  # fmt: skip
                if d.reserved is not None:
                    grown, released = c.reserved_grown_bytes, c.reserved_released_bytes
                    row.append(f"+{fmt_bytes(grown)} / -{fmt_bytes(released)}")
                rows.append(row)
            lines += _indented(head, rows)
    return "\n".join(lines)


def _indented(head: list[str], rows: list[list[str]]) -> list[str]:
    """A table (first column text, the rest numbers) at its natural width, under its title."""
    return ["    " + line for line in table_text(text_table(head, rows, left=1)).splitlines()]


def _number(step: int | None) -> str:
    return "-" if step is None else f"#{step}"


def memory_figure(plt, doc: MemoryDocument):
    """A panel per device holding a visible share of the bytes, one byte unit for all,
    y from 0, one shared time axis (panels line up), steps shaded."""
    # a device holding under 1% of the largest one's bytes (often the CPU: a few hundred
    # bytes next to GiB) is a flat line at 0 in the shared unit: named in the title instead
    devices = doc.devices
    largest = max(_top(d) for d in devices)
    shown = [d for d in devices if _top(d) >= SMALL_PANEL * largest] or devices
    left_out = [d for d in devices if all(d is not s for s in shown)]
    scale, unit = byte_scale(max(_top(d) for d in shown))
    fig, axes = plt.subplots(
        len(shown), 1, figsize=(11, 3.2 * len(shown)), dpi=DPI, squeeze=False, sharex=True
    )
    for ax, d in zip(axes[:, 0], shown, strict=True):
        t_ms = d.t_us / 1e3
        ax.step(t_ms, d.allocated / scale, where="post", label="allocated", lw=1)
        if d.reserved is not None:
            ax.step(t_ms, d.reserved / scale, where="post", label="reserved", lw=1)
        for k, s in enumerate(doc.steps):
            ax.axvspan(
                s.start_us / 1e3,
                s.end_us / 1e3,
                color="0.9" if k % 2 == 0 else "0.95",
                zorder=0,
            )
            x = s.start_us / 1e3
            ax.text(x, 1.0, f"#{s.number}", transform=ax.get_xaxis_transform(), fontsize=7)
        peak_ms = d.peak.at_us / 1e3
        ax.plot([peak_ms], [d.peak_bytes / scale], "v", color="C3")
        right_half = peak_ms > (float(t_ms.min()) + float(t_ms.max())) / 2
        ax.annotate(
            f"peak {fmt_bytes(d.peak_bytes)}: {inert(d.peak.op)}",
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
    fig.suptitle(inert(Path(doc.path).name + (f" ({note})" if note else "")), fontsize=9)
    fig.tight_layout()
    return fig


def _top(d: MemoryDevice) -> float:
    """Highest byte count a panel shows (allocated or reserved)."""
    reserved = float(d.reserved.max()) if d.reserved is not None else 0.0
    return max(float(d.allocated.max()), reserved, 0.0)


def _ms(us: float) -> str:
    """A time in the shared format (3 significant digits, unit chosen)."""
    return fmt_us(us)


def _step(step: int | None) -> str:
    return f" (step #{step})" if step is not None else ""
