"""The communication comparison of a diff: per collective family, time and bus bandwidth
in each run (analysis.collectives).

A family's time is compared per step (runs can hold different step counts), its bus
bandwidth as the time-weighted figure over the calls whose bytes both runs record.
A family present in one run only says so (NCCL replaced by a custom all-reduce, or
RCCL on the other vendor's run). Empty when neither run holds a collective.
"""

from __future__ import annotations

from typing import Any

from ..analysis.collectives import Collectives, collectives
from ..analysis.stepmap import step_count
from ..trace import Trace


def comm_diff(trace_a: Trace, trace_b: Trace) -> dict[str, Any]:
    """Per family: calls, time, time per step and bus bandwidth of A and B (JSON-ready)."""
    ca, cb = collectives(trace_a), collectives(trace_b)
    if not ca.rows and not cb.rows:
        return {}
    sides = {"a": _families(ca, step_count(trace_a)), "b": _families(cb, step_count(trace_b))}
    names = list(dict.fromkeys([*sides["a"], *sides["b"]]))
    return {
        "families": [
            {"family": name, "a": sides["a"].get(name), "b": sides["b"].get(name)} for name in names
        ]
    }


def _families(c: Collectives, steps: int) -> dict[str, dict[str, Any]]:
    out: dict[str, dict[str, Any]] = {}
    for f in c.families:
        rows = [r for r in c.rows if r.family == f.family]
        sized = [r for r in rows if r.busbw_gbps is not None]
        time = sum(r.bytes_us for r in sized)
        busbw = sum(r.busbw_gbps * r.bytes_us for r in sized) / time if time > 0 else None
        out[f.family] = {
            "calls": f.calls,
            "total_us": f.total_us,
            "per_step_us": f.total_us / max(steps, 1),
            "exposed_us": f.exposed_us,
            "busbw_gbps": busbw,
        }
    return out
