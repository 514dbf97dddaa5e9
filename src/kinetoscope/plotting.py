"""Static pictures of a trace for READMEs and slides: the timeline (host threads and
device streams as busy lanes, steps marked) over a per-step bar of where time went.

matplotlib is imported by the caller (commands/plot.py) with the Agg backend and
handed in, so this module never needs a display. The per-step split comes from
`step_breakdown`, the one place to switch when analysis offers a finer
decomposition (data wait, sync, dispatch).
"""

from __future__ import annotations

import numpy as np

from .analysis.intervals import merge
from .analysis.steps import step_stats
from .trace import Trace

#: Busy intervals closer than this share of the window are drawn as one bar.
RESOLUTION = 1 / 3000


def step_breakdown(trace: Trace) -> tuple[list[str], dict[str, list[float]], list[float]]:
    """(step labels, {part: us per step} summing to each step's duration, host busy us).

    Today: device busy and device idle (from analysis.steps); host busy is drawn as a
    marker over the bar since it overlaps both."""
    stats = step_stats(trace)
    labels = [s.label for s in stats]
    device = [min(s.device_busy_us, s.dur) for s in stats]
    idle = [s.dur - d for s, d in zip(stats, device, strict=True)]
    return labels, {"device busy": device, "device idle": idle}, [s.host_busy_us for s in stats]


def _busy(trace: Trace, index: np.ndarray, resolution: float) -> list[tuple[float, float]]:
    """Merged busy (start ms, width ms) of the events in `index`, relative to the trace start."""
    s, e = merge(trace.ts[index] - trace.start_time, trace.end[index] - trace.start_time)
    if not len(s):
        return []
    keep = np.ones(len(s), dtype=bool)
    keep[1:] = s[1:] - e[:-1] > resolution
    run = np.cumsum(keep) - 1
    ends = np.zeros(int(run[-1]) + 1)
    np.maximum.at(ends, run, e)
    return [(a / 1e3, (b - a) / 1e3) for a, b in zip(s[keep], ends, strict=True)]


def trace_figure(plt, trace: Trace, title: str):
    """Lanes on top (host threads, then device streams), the per-step bars below."""
    lanes = [ln for ln in trace.lanes if ln.kind in ("host", "device")]
    lanes.sort(key=lambda ln: ln.kind != "host")
    resolution = max(trace.end_time - trace.start_time, 1.0) * RESOLUTION
    keep = ~trace.is_instant & (trace.dur > 0)
    fig, (top, bottom) = plt.subplots(
        2, 1, figsize=(11, 2.2 + 0.35 * len(lanes) + 2.6), dpi=110,
        gridspec_kw={"height_ratios": [0.6 + 0.35 * len(lanes), 2.6]},
    )  # fmt: skip
    for k, s in enumerate(trace.steps):
        x0, x1 = trace.rel(s.start) / 1e3, trace.rel(s.end) / 1e3
        top.axvspan(x0, x1, color="0.93" if k % 2 == 0 else "0.86", zorder=0)
        top.text(x0, len(lanes) - 0.35, f"#{s.number}", fontsize=7, va="bottom")
    for row, lane in enumerate(lanes):
        index = np.flatnonzero(keep & (trace.lane == lane.id))
        color = "tab:blue" if lane.kind == "host" else "tab:green"
        y = len(lanes) - 1 - row
        top.broken_barh(_busy(trace, index, resolution), (y - 0.35, 0.7), color=color)
    top.set_yticks(range(len(lanes)))
    top.set_yticklabels([ln.label[:28] for ln in reversed(lanes)], fontsize=8)
    top.set_ylim(-0.6, len(lanes) + 0.2)
    top.set_xlabel("time since trace start (ms)")
    top.set_title(title, fontsize=9)
    labels, parts, host = step_breakdown(trace)
    x = np.arange(len(labels))
    bottom_of = np.zeros(len(labels))
    for (name, values), color in zip(parts.items(), ["tab:green", "0.75"], strict=False):
        ms = np.array(values) / 1e3
        bottom.bar(x, ms, bottom=bottom_of, label=name, color=color, width=0.7)
        bottom_of += ms
    bottom.plot(x, np.array(host) / 1e3, "_", color="tab:blue", markersize=22, mew=2,
                label="host busy")  # fmt: skip
    bottom.set_xticks(x)
    bottom.set_xticklabels(labels, fontsize=8)
    bottom.set_ylabel("ms per step")
    bottom.set_ylim(bottom=0)
    bottom.legend(loc="upper center", bbox_to_anchor=(0.5, -0.12), ncol=3, fontsize=8,
                  frameon=False)  # fmt: skip
    fig.tight_layout()
    return fig
