"""The report's `quality`, `kernel_types`, `streams`, `communication` and `llm` sections,
as plain data.

Built once here from the analyses (`analysis.quality`, `analysis.kernel_types`,
`analysis.streams`) so that every renderer lays out the same numbers; the
shapes are documented in docs/report-schema.md.
"""

from __future__ import annotations

from typing import Any

from ..analysis.collectives import collectives
from ..analysis.kernel_types import kernel_types
from ..analysis.llm import PHASES, llm_view
from ..analysis.llm_split import pass_split
from ..analysis.quality import trace_quality
from ..analysis.streams import stream_report
from ..trace import Trace


def quality_section(trace: Trace) -> dict[str, Any]:
    # through the trace's cache: the trace-quality rule asked for the same analysis
    return trace.memo(trace_quality).to_dict()


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
    sr = trace.memo(stream_report)  # computed once, with the stream rules
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


def communication_section(trace: Trace) -> dict[str, Any]:
    """Every collective by family and kind (analysis.collectives); {} without any."""
    c = collectives(trace)
    if not c.rows:
        return {}
    return {
        "total_us": c.total_us,
        "families": [
            {
                "family": f.family,
                "calls": f.calls,
                "total_us": f.total_us,
                "busy_us": f.busy_us,
                "hidden_us": f.hidden_us,
                "exposed_us": f.exposed_us,
            }
            for f in c.families
        ],
        "collectives": [
            {
                "family": r.family,
                "kind": r.kind,
                "calls": r.calls,
                "total_us": r.total_us,
                "median_us": r.median_us,
                "p90_us": r.p90_us,
                "min_us": r.min_us,
                "max_us": r.max_us,
                "calls_with_bytes": r.calls_with_bytes,
                "bytes": r.bytes,
                "bytes_us": r.bytes_us,
                "ranks": r.ranks,
                "algbw_gbps": r.algbw_gbps,
                "busbw_gbps": r.busbw_gbps,
                "skew": r.skew,
                "step_skew": r.step_skew,
            }
            for r in c.rows
        ],
    }


def llm_section(trace: Trace) -> dict[str, Any]:
    """Passes of a generation (analysis.llm): phases, per-phase totals, time to first
    token, time per output token; empty when the trace holds no generation."""
    view = llm_view(trace)
    if view is None:
        return {}
    latency = view.decode_latency
    totals = view.totals()
    return {
        "source": view.source,
        "phase_from": view.phase_from,
        "evidence": view.evidence,
        "dropped_passes": view.dropped,
        "engine": view.engine,
        "has_profiler_steps": bool(trace.steps),
        "ttft_us": view.ttft_us,
        "tpot_us": view.tpot_us,
        "phases": {phase: len(view.phase(phase)) for phase in PHASES},
        "phase_totals": {
            phase: {
                "passes": t.passes,
                "tokens": t.tokens,
                "wall_us": t.wall_us,
                "host_us": t.host_us,
                "device_busy_us": t.device_busy_us,
                "graph_launches": t.graph_launches,
            }
            for phase, t in totals.items()
        },
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
                "host_us": p.host_us,
                "tokens": p.tokens,
                "tokens_from": p.tokens_from,
                "batch": p.batch,
                "device_busy_us": p.device_busy_us,
                "comm_busy_us": p.comm_busy_us,
                "compute_busy_us": p.compute_busy_us,
                "split_us": pass_split(trace, p),
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
