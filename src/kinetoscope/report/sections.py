"""The report's `quality`, `kernel_types`, `streams` and `llm` sections as plain data.

Built once here from the analyses (`analysis.quality`, `analysis.kernel_types`,
`analysis.streams`) so that every renderer lays out the same numbers; the
shapes are documented in docs/report-schema.md.
"""

from __future__ import annotations

from typing import Any

from ..analysis.kernel_types import kernel_types
from ..analysis.llm import llm_view
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


PHASES = ("prefill", "decode", "mixed", "unknown")


def llm_section(trace: Trace) -> dict[str, Any]:
    """Prefill/decode passes (analysis.llm); empty when the trace holds no generation."""
    view = llm_view(trace)
    if view is None:
        return {}
    latency = view.decode_latency
    return {
        "source": view.source,
        "ttft_us": view.ttft_us,
        "phases": {phase: len(view.phase(phase)) for phase in PHASES},
        "decode_latency_us": (
            {"median": latency.median, "mean": latency.mean, "p90": latency.p90}
            if latency is not None
            else None
        ),
        "passes": [
            {
                "label": p.label,
                "phase": p.phase,
                "start_us": trace.rel(p.start),
                "dur_us": p.dur,
                "tokens": p.tokens,
                "batch": p.batch,
                "device_busy_us": p.device_busy_us,
                "kernels": p.kernels,
                "graph_launches": p.graph_launches,
                "blocked_us": p.blocked_us,
                "kv_appends": p.kv_appends,
                "kv_append_bytes": p.kv_append_bytes,
                "kv_writes": p.kv_writes,
                "dtod_copies": p.dtod_copies,
                "dtod_bytes": p.dtod_bytes,
            }
            for p in view.passes
        ],
    }
