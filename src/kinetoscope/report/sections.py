"""The report's `quality`, `kernel_types` and `streams` sections as plain data.

Built once here from the analyses (`analysis.quality`, `analysis.kernel_types`,
`analysis.streams`) so that every renderer lays out the same numbers; the
shapes are documented in docs/report-schema.md.
"""

from __future__ import annotations

from typing import Any

from ..analysis.kernel_types import kernel_types
from ..analysis.quality import trace_quality
from ..analysis.streams import stream_report
from ..trace import Trace


def quality_section(trace: Trace) -> dict[str, Any]:
    q = trace_quality(trace)
    return {
        "grade": q.grade,
        "reasons": q.reasons,
        "resolution_us": {"host": q.resolution.host_us, "device": q.resolution.device_us},
        "issues": [
            {"id": i.id, "level": i.level, "text": i.text, "count": i.count, "value_us": i.value_us}
            for i in q.issues
        ],
    }


def kernel_types_section(trace: Trace) -> dict[str, Any]:
    kt = kernel_types(trace)
    return {
        "total_us": kt.total_us,
        "steps": kt.steps,
        "types": [
            {
                "type": r.type,
                "events": r.events,
                "total_us": r.total_us,
                "share": r.share,
                "per_step_us": r.per_step_us,
            }
            for r in kt.rows
        ],
        "by_step": [{"step": n, "us": per} for n, per in sorted(kt.by_step.items())],
        "top_other": [{"name": n, "us": us} for n, us in kt.top_other],
    }


def streams_section(trace: Trace) -> dict[str, Any]:
    sr = stream_report(trace)
    return {
        "streams": [
            {
                "device": s.device,
                "stream": s.stream,
                "label": s.label,
                "events": s.events,
                "busy_us": s.busy_us,
                "communication_us": s.communication_us,
            }
            for s in sr.streams
        ],
        "communication_us": sr.communication_us,
        "hidden_us": sr.hidden_us,
        "exposed_us": sr.exposed_us,
        "hidden_share": sr.hidden_share,
        "steps": [
            {
                "step": s.step,
                "step_us": s.step_us,
                "communication_us": s.communication_us,
                "exposed_us": s.exposed_us,
                "exposed_share": s.exposed_share,
            }
            for s in sr.steps
        ],
    }
