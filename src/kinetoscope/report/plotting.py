"""The one matplotlib set-up every picture goes through, and the trace's own picture.

`pyplot` imports matplotlib (the optional `plot` extra) only when a picture is
asked for, on the Agg backend, so nothing needs a display and the rest of the tool
runs without it; every figure is drawn at one `DPI`, and `plot_format` says which
file names matplotlib can write. The renderers (`trace_figure` here; the memory,
sweep and tune figures beside it in report/) take the `plt` handed to them and only
draw; the command writes the figure (`files.figures.save_figure`: temp file +
rename, never over an input).

`trace_figure` is the picture for READMEs and slides: the timeline (host threads
and device streams as busy lanes, steps marked) over a per-step bar of where time
went. It draws a `TracePlot` (`report.plot_model`) that the build step
(`pipeline.plot_data`) fills: merged busy intervals per lane, and the per-step split
of `analysis.stats`, the same numbers `explain` prints; nothing here reads a Trace.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from ..errors import UsageError
from ..formatting.escaping import inert
from .plot_model import TracePlot

#: Formats matplotlib writes, by the output file's extension.
PLOT_FORMATS = ("png", "svg", "pdf")
#: Dots per inch of every figure, and so of every raster written from one.
DPI = 110


def pyplot(what: str):
    """`matplotlib.pyplot` on the Agg backend (files only, no display); `what` names
    the option or command in the one-line error when the `plot` extra is missing."""
    try:
        import matplotlib
    except ImportError:
        raise UsageError(f"{what} needs matplotlib: pip install 'kinetoscope[plot]'") from None
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def plot_format(output: Path) -> str:
    """The format `output`'s extension names; UsageError when matplotlib cannot write it."""
    fmt = Path(output).suffix.lstrip(".").lower()
    if fmt not in PLOT_FORMATS:
        raise UsageError(f"{output}: the plot is written as {', '.join(PLOT_FORMATS)}; name it so")
    return fmt


#: The stacked parts, bottom to top, with their colours.
PART_COLORS = {
    "device busy": "tab:green",
    "dispatch": "tab:blue",
    "data wait": "tab:orange",
    "sync wait": "tab:red",
    "other": "0.72",
}
#: Busy lanes of the timeline: colours none of the parts use, so a host thread's bar
#: (all its work: dispatch, Python, waits) is never read as one part of the split.
LANE_COLORS = {"host": "tab:purple", "device": "tab:cyan"}
LANE_LABELS = {"host": "host thread busy", "device": "device stream busy"}


def time_scale(span_us: float) -> tuple[float, str]:
    """(microseconds per unit, unit) for an axis spanning `span_us`: us below 1 ms, ms
    below 1 s, else s, so tick labels read 250 us rather than 0.25 ms."""
    if span_us >= 1e6:
        return 1e6, "s"
    if span_us >= 1e3:
        return 1e3, "ms"
    return 1.0, "us"


def byte_scale(top_bytes: float) -> tuple[float, str]:
    """(bytes per unit, unit) for an axis up to `top_bytes`: B, KiB, MiB or GiB, the
    largest that keeps the top at 1 or more (a 32 KiB peak reads 32, not 0.031 MiB)."""
    for power, unit in ((30, "GiB"), (20, "MiB"), (10, "KiB")):
        if top_bytes >= 2.0**power:
            return 2.0**power, unit
    return 1.0, "B"


def trace_figure(plt, plot: TracePlot):
    """Lanes on top (host threads, then device streams), the per-step bars below."""
    lanes = plot.lanes
    fig, (top, bottom) = plt.subplots(
        2, 1, figsize=(11, 2.2 + 0.35 * len(lanes) + 2.6), dpi=DPI,
        gridspec_kw={"height_ratios": [0.6 + 0.35 * len(lanes), 2.6]},
    )  # fmt: skip
    per, unit = time_scale(plot.span_us)
    for k, s in enumerate(plot.steps):
        x0, x1 = s.start_us / per, s.end_us / per
        top.axvspan(x0, x1, color="0.93" if k % 2 == 0 else "0.86", zorder=0)
        top.text(x0, len(lanes) - 0.35, f"#{s.number}", fontsize=7, va="bottom")
    drawn = {}
    for row, lane in enumerate(lanes):
        bars = [(a / per, w / per) for a, w in lane.bars]
        y = len(lanes) - 1 - row
        drawn[lane.kind] = top.broken_barh(bars, (y - 0.35, 0.7), color=LANE_COLORS[lane.kind])
    top.set_yticks(range(len(lanes)))
    top.set_yticklabels([_shown(ln.label[:28]) for ln in reversed(lanes)], fontsize=8)
    top.set_ylim(-0.6, len(lanes) + 0.2)
    top.set_xlabel(f"time since trace start ({unit})")
    top.set_title(_shown(plot.title), fontsize=9)
    # the lanes' legend sits above them: never over a bar
    top.legend(
        [drawn[k] for k in LANE_COLORS if k in drawn],
        [LANE_LABELS[k] for k in LANE_COLORS if k in drawn],
        loc="lower right", bbox_to_anchor=(1.0, 1.0), ncol=2, fontsize=7, frameon=False,
    )  # fmt: skip
    labels, parts = plot.step_labels, plot.parts
    x = np.arange(len(labels))
    bottom_of = np.zeros(len(labels))
    step_per, step_unit = time_scale(max(map(sum, zip(*parts.values(), strict=True)), default=0))
    for name, values in parts.items():
        scaled = np.array(values) / step_per
        bottom.bar(x, scaled, bottom=bottom_of, label=name, color=PART_COLORS[name], width=0.7)
        bottom_of += scaled
    bottom.set_xticks(x)
    bottom.set_xticklabels([_shown(label) for label in labels], fontsize=8)
    bottom.set_ylabel(f"{step_unit} per step")
    bottom.set_ylim(bottom=0)
    bottom.legend(loc="upper center", bbox_to_anchor=(0.5, -0.12), ncol=len(parts), fontsize=8,
                  frameon=False)  # fmt: skip
    fig.tight_layout()
    return fig


def _shown(text: str) -> str:
    """Text from a trace or a file name as matplotlib draws it literally: control
    characters escaped (matplotlib's missing-glyph warning printed them raw on
    stderr), `$` escaped (a pair would start mathtext, which can refuse to parse)."""
    return inert(text).replace("$", r"\$")
