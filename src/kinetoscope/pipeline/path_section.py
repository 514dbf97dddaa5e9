"""The critical path as every renderer shows it: segments that tile the window, and the
path's time by what held it, with the most shortening each part could save.

The account (`analysis.account`) says which class held each instant; the path names the
event that held it. Times here are relative to the trace start, as Perfetto shows them.
"""

from __future__ import annotations

from ..analysis.account.path import critical_path
from ..analysis.stepmap import step_count
from ..trace import Trace

#: Parts of the path listed by name (the rest are summed in the account's classes).
TOP_PARTS = 10


def path_section(trace: Trace) -> dict:
    path = critical_path(trace)
    segments, resolution = path.segments(trace)
    steps = max(step_count(trace), 1)
    window = path.window_us
    return {
        "window_us": window,
        "resolution_us": resolution,
        "segments": [
            {"class": s.cls, "name": s.name, "start_us": trace.rel(s.start), "dur_us": s.dur}
            for s in segments
        ],
        "parts": [
            {
                "class": p.cls,
                "name": p.name,
                "us": p.us,
                "share": p.us / window if window > 0 else 0.0,
                "segments": p.segments,
                "first_us": trace.rel(p.first.start),
                # shortening this part by all of it saves at most its path time, per step
                "saving_per_step_us": p.us / steps,
            }
            for p in path.parts(trace, TOP_PARTS)
        ],
    }
