"""Static pictures of a trace for READMEs and slides: the timeline (host threads and
device streams as busy lanes, steps marked) over a per-step bar of where time went.

matplotlib is imported by the caller (commands/plot.py) with the Agg backend and
handed in, so this module never needs a display. The per-step split is the
host-time decomposition of `analysis.stats` (see `step_breakdown`), the same
numbers `explain` prints.
"""

from __future__ import annotations

import numpy as np

from .analysis.intervals import merge
from .analysis.stats import trace_stats
from .trace import Trace

#: Busy intervals closer than this share of the window are drawn as one bar.
RESOLUTION = 1 / 3000


#: The stacked parts, bottom to top, with their colours.
PART_COLORS = {
    "device busy": "tab:green",
    "dispatch": "tab:blue",
    "data wait": "tab:orange",
    "sync wait": "tab:red",
    "other": "0.72",
}


def step_breakdown(trace: Trace) -> tuple[list[str], dict[str, list[float]]]:
    """(step labels, {part: us per step}), the parts adding up to each step's duration.

    The step's wall-clock time is split as analysis.hosttime splits it (data wait,
    sync wait, dispatch + launch, Python/other: disjoint, in that priority), and the
    dispatch and Python/other time during which device work ran is shown as
    "device busy": the host was ahead there and the device set the pace. What stays
    under "dispatch" and "other" is the exposed part, while the device idled."""
    steps = trace_stats(trace).steps
    labels = [s.label for s in steps]
    exposed_dispatch = [s.dispatch_exposed_us for s in steps]
    exposed_other = [s.other_exposed_us for s in steps]
    hidden = [
        (s.dispatch_us - d) + (s.other_us - o)
        for s, d, o in zip(steps, exposed_dispatch, exposed_other, strict=True)
    ]
    parts = {
        "device busy": hidden,
        "dispatch": exposed_dispatch,
        "data wait": [s.data_wait_us for s in steps],
        "sync wait": [s.sync_wait_us for s in steps],
        "other": exposed_other,
    }
    return labels, parts


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
    labels, parts = step_breakdown(trace)
    x = np.arange(len(labels))
    bottom_of = np.zeros(len(labels))
    for name, values in parts.items():
        ms = np.array(values) / 1e3
        bottom.bar(x, ms, bottom=bottom_of, label=name, color=PART_COLORS[name], width=0.7)
        bottom_of += ms
    bottom.set_xticks(x)
    bottom.set_xticklabels(labels, fontsize=8)
    bottom.set_ylabel("ms per step")
    bottom.set_ylim(bottom=0)
    bottom.legend(loc="upper center", bbox_to_anchor=(0.5, -0.12), ncol=len(parts), fontsize=8,
                  frameon=False)  # fmt: skip
    fig.tight_layout()
    return fig
