"""The build step of `kinetoscope plot`: a Trace -> the `TracePlot` the figure draws.

Each host thread and device stream becomes a lane of merged busy intervals (gaps
under `RESOLUTION` of the window closed: at figure width they are below a pixel,
and a lane of a million kernels would otherwise be a million bars), and each step
becomes a bar split as explain splits host time (`step_breakdown`, the numbers of
`analysis.stats`), so the picture and `explain` cannot disagree.
"""

from __future__ import annotations

import numpy as np

from ..analysis.intervals import merge
from ..analysis.stats import trace_stats
from ..report.plot_model import PlotLane, StepBand, TracePlot
from ..trace import Trace

#: Busy intervals closer than this share of the window are drawn as one bar.
RESOLUTION = 1 / 3000


def trace_plot(trace: Trace, title: str) -> TracePlot:
    """Lanes (host threads, then device streams), step bands and per-step parts."""
    lanes = [ln for ln in trace.lanes if ln.kind in ("host", "device")]
    lanes.sort(key=lambda ln: ln.kind != "host")
    resolution = max(trace.end_time - trace.start_time, 1.0) * RESOLUTION
    keep = ~trace.is_instant & (trace.dur > 0)
    drawn = [
        PlotLane(
            lane.label,
            lane.kind,
            _busy(trace, np.flatnonzero(keep & (trace.lane == lane.id)), resolution),
        )
        for lane in lanes
    ]
    bands = [StepBand(s.number, trace.rel(s.start), trace.rel(s.end)) for s in trace.steps]
    labels, parts = step_breakdown(trace)
    return TracePlot(title, trace.end_time - trace.start_time, bands, drawn, labels, parts)


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
    """Merged busy (start us, width us) of the events in `index`, relative to the trace start."""
    s, e = merge(trace.ts[index] - trace.start_time, trace.end[index] - trace.start_time)
    if not len(s):
        return []
    keep = np.ones(len(s), dtype=bool)
    keep[1:] = s[1:] - e[:-1] > resolution
    run = np.cumsum(keep) - 1
    ends = np.zeros(int(run[-1]) + 1)
    np.maximum.at(ends, run, e)
    return [(a, b - a) for a, b in zip(s[keep], ends, strict=True)]
