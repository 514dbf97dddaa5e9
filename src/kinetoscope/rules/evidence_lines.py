"""Name the source line in every finding's evidence, once all the rules have run.

Rules locate their evidence at an event (its name and start) or at an instant (a gap,
a step). Where the trace has Python stacks (`with_stack=True`), the event's line is
the innermost user frame open when it started: for a device event, when the call that
launched it started (`analysis.source_lines.lines_of`). An instant that is no event is
given the line the host was at then. Doing it here, after the rules, names the line in
every rule's evidence without each rule looking it up, and costs nothing on a trace
without stacks.
"""

from __future__ import annotations

import numpy as np

from ..analysis.source_lines import line_at, line_timeline, lines_of
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
            if evidence.ts_us is not None and evidence.source is None:
                pos = _line_of(trace, evidence)
                if pos >= 0:
                    evidence.source = timeline.lines[pos].label


def _line_of(trace: Trace, evidence: Evidence) -> int:
    t = float(evidence.ts_us) + trace.start_time
    near = trace.events_in(t - _TOLERANCE_US, t + _TOLERANCE_US)
    if evidence.name:
        named = [int(i) for i in near if trace.name(int(i)) == evidence.name]
        if named:
            return int(lines_of(trace, np.array(named[:1]))[0])
    timeline = line_timeline(trace)
    return int(line_at(timeline.start, timeline.end, timeline.line, np.array([t]))[0])
