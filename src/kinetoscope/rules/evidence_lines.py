"""Name the source line in every finding's evidence, once all the rules have run.

Rules locate their evidence at an event (its name and start) or at an instant (a gap,
a step), or name a kind of event without locating one (`aten::add: 400 calls`). Where
the trace has Python stacks (`with_stack=True`), the event's line is the innermost user
frame open when it started: for a device event, when the call that launched it started
(`analysis.source_lines.lines_of`). An instant that is no event is given the line the
host was at then. A kind of event is given the line that holds most of its events,
and says how many other lines hold the rest. Doing it here, after the rules, names the line in
every rule's evidence without each rule looking it up, and costs nothing on a trace
without stacks.
"""

from __future__ import annotations

import numpy as np

from ..analysis.source_lines import line_at, line_timeline, lines_of, parse_frame
from ..trace import Trace
from .base import Evidence, Finding

#: How far (us) an evidence's start may lie from its event's: `ts_us` went through a
#: subtraction of the trace start, which rounds at the last place of a 13-digit time.
_TOLERANCE_US = 0.01


def attach_lines(trace: Trace, findings: list[Finding]) -> None:
    """Set `Evidence.source` where a user line holds the evidence's event or instant."""
    timeline = line_timeline(trace)
    if not timeline.lines:
        return
    for finding in findings:
        for evidence in finding.evidence:
            if evidence.source is not None:
                continue
            if evidence.ts_us is not None:
                pos = _line_of(trace, evidence)
                if pos >= 0:
                    evidence.source = timeline.lines[pos].label
            elif evidence.name:
                evidence.source = _lines_of_name(trace, evidence.name)
            if evidence.source and _names_itself(evidence):
                evidence.source = None


def _names_itself(evidence: Evidence) -> bool:
    """The evidence is about the user frame its line names (`train.py(42): step`)."""
    frame = parse_frame(evidence.name or "")
    return frame is not None and evidence.source.startswith(frame.label)


def _line_of(trace: Trace, evidence: Evidence) -> int:
    t = float(evidence.ts_us) + trace.start_time
    near = trace.events_in(t - _TOLERANCE_US, t + _TOLERANCE_US)
    if evidence.name:
        named = [int(i) for i in near if trace.name(int(i)) == evidence.name]
        if named:
            return int(lines_of(trace, np.array(named[:1]))[0])
    timeline = line_timeline(trace)
    return int(line_at(timeline.start, timeline.end, timeline.line, np.array([t]))[0])


def _lines_of_name(trace: Trace, name: str) -> str | None:
    """The line holding most events named `name`, and how many other lines hold some."""
    name_id = trace.name_index.get(name)
    if name_id is None:
        return None
    found = lines_of(trace, np.flatnonzero(trace.name_id == name_id))
    found = found[found >= 0]
    if not len(found):
        return None
    ids, counts = np.unique(found, return_counts=True)
    top = line_timeline(trace).lines[int(ids[np.argmax(counts)])].label
    others = len(ids) - 1
    return top if not others else f"{top} (and {others} other line{'s' * (others > 1)})"
