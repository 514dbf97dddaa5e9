"""kinetoscope's reading as tracks of the exported trace: the findings and the critical path.

Both go on one process of their own ("kinetoscope", a pid no event uses):

- "kinetoscope findings": each piece of a finding's evidence that has a time becomes a
  slice named by the finding's title, its evidence text, id and severity in args; pieces
  that overlap partially go to sub-tracks ("kinetoscope findings (overlap N)"), laid out
  as the trace's own slices are (`layout.lanes`);
- "critical path": the report's `critical_path.segments`, each a slice named by what held
  that stretch (its class in args). The segments tile the window, so they never overlap.

Report times are relative to the trace start (`TraceFacts.origin_us`); slices take the
trace's own clock back by adding it.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .layout import lanes, to_ns

PROCESS = "kinetoscope"
FINDINGS = "kinetoscope findings"
PATH = "critical path"
#: tids of the two tracks; their sub-tracks count up from here
_PATH_TID, _FINDINGS_TID = 1, 1001


def report_events(report, pid: int) -> list[dict[str, Any]]:
    """Metadata and slices of the two tracks (none where the report has nothing to show)."""
    origin = report.trace.origin_us
    path = [
        (s["name"], origin + s["start_us"], s["dur_us"], "path", {"class": s["class"]})
        for s in report.critical_path.get("segments", [])
    ]
    found = []
    for finding in report.findings:
        for ev in finding.evidence:
            if ev.ts_us is None:
                continue
            args = {"finding": finding.id, "severity": finding.severity, "evidence": ev.text}
            if ev.value is not None:
                args["value"] = ev.value
                if ev.unit:
                    args["unit"] = ev.unit
            found.append((finding.title, origin + ev.ts_us, ev.dur_us or 0.0, "finding", args))
    names: dict[int, str] = {}
    out = _laid_out(pid, path, _PATH_TID, PATH, names)
    out += _laid_out(pid, found, _FINDINGS_TID, FINDINGS, names)
    if not out:
        return []
    meta = [_meta(pid, None, "process_name", "name", PROCESS)]
    meta += [_meta(pid, tid, "thread_name", "name", name) for tid, name in sorted(names.items())]
    meta += [_meta(pid, tid, "thread_sort_index", "sort_index", tid) for tid in sorted(names)]
    return meta + out


def _laid_out(pid: int, pieces: list, tid: int, name: str, names: dict) -> list[dict]:
    """Slices of one track, on sub-tracks where they overlap partially (times rounded to
    the nanosecond first, as they are written, so the layout sees what Perfetto reads)."""
    if not pieces:
        return []
    ts = np.round([p[1] for p in pieces], 3)
    dur = np.round(np.maximum([p[2] for p in pieces], 0.0), 3)
    lane = lanes(to_ns(ts), to_ns(dur)).tolist()
    out = []
    for (title, _, _, cat, args), start, length, n in zip(
        pieces, ts.tolist(), dur.tolist(), lane, strict=True
    ):
        names[tid + n] = name if n == 0 else f"{name} (overlap {n})"
        out.append({"ph": "X", "cat": f"kinetoscope_{cat}", "name": title, "pid": pid,
                    "tid": tid + n, "ts": start, "dur": length, "args": args})  # fmt: skip
    return out


def _meta(pid: int, tid: int | None, kind: str, key: str, value) -> dict[str, Any]:
    event: dict[str, Any] = {"ph": "M", "name": kind, "pid": pid, "args": {key: value}}
    if tid is not None:
        event["tid"] = tid
    return event
