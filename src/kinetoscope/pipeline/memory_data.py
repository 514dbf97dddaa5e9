"""The allocator's story as JSON data: `kinetoscope memory --format json` and the MCP
`memory` tool answer with this one builder, so the two cannot drift apart.

Per device (`analysis.memory.memory_timeline`): the peak and the op at it, the
largest allocations, per-step churn (cut to `steps` rows, with a `trimmed` count).
"""

from __future__ import annotations

from dataclasses import asdict
from typing import Any

from ..analysis.memory import DeviceMemory, op_label
from ..trace import Trace


def memory_data(
    trace: Trace, devices: list[DeviceMemory], steps: int | None = None
) -> dict[str, Any]:
    """Each device's memory facts; churn cut to `steps` rows (None: all)."""

    def allocation(a) -> dict[str, Any]:
        return {
            "ts_us": trace.rel(a.ts),
            "step": a.step,
            "bytes": a.nbytes,
            "op": op_label(trace, a.op),
        }

    def device(d: DeviceMemory) -> dict[str, Any]:
        churn = d.churn if steps is None else d.churn[:steps]
        return {
            "device": d.device,
            "events": d.events,
            "relative": d.relative,
            "peak_bytes": d.peak_bytes,
            "peak": allocation(d.peak),
            "peak_reserved_bytes": None if d.reserved is None else float(d.reserved.max()),
            "largest": [allocation(a) for a in d.largest],
            "churn": [asdict(c) for c in churn],
            "trimmed": {"churn": len(d.churn) - len(churn)},
        }

    return {"devices": [device(d) for d in devices]}
