"""The allocator's story, built once: the `MemoryDocument` that `kinetoscope memory`'s
text and figure lay out (`report.memory_render`), and its JSON, which `kinetoscope
memory --format json` and the MCP `memory` tool answer with, so none of them can drift
apart.

Per device (`analysis.memory.memory_timeline`): the peak and the op at it, the
largest allocations, per-step churn (the JSON cut to `steps` rows, with a `trimmed`
count). Op labels and times relative to the trace start are computed here, from the
Trace, so the renderer reads none.
"""

from __future__ import annotations

from dataclasses import asdict
from typing import Any

from ..analysis.memory import Allocation, DeviceMemory, op_label
from ..report.memory_model import (
    MemoryAllocation,
    MemoryChurn,
    MemoryDevice,
    MemoryDocument,
)
from ..report.plot_model import StepBand
from ..trace import Trace


def memory_document(trace: Trace, devices: list[DeviceMemory]) -> MemoryDocument:
    """What the memory renderer lays out, from `memory_timeline(trace)`."""

    def allocation(a: Allocation) -> MemoryAllocation:
        return MemoryAllocation(trace.rel(a.ts), a.nbytes, op_label(trace, a.op), a.step)

    def device(d: DeviceMemory) -> MemoryDevice:
        return MemoryDevice(
            device=d.device,
            events=d.events,
            relative=d.relative,
            peak_bytes=d.peak_bytes,
            peak=allocation(d.peak),
            t_us=d.ts - trace.start_time,
            allocated=d.allocated,
            reserved=d.reserved,
            largest=[allocation(a) for a in d.largest],
            churn=[MemoryChurn(**asdict(c)) for c in d.churn],
        )

    bands = [StepBand(s.number, trace.rel(s.start), trace.rel(s.end)) for s in trace.steps]
    return MemoryDocument(trace.path, [device(d) for d in devices], bands)


def memory_data(doc: MemoryDocument, steps: int | None = None) -> dict[str, Any]:
    """Each device's memory facts; churn cut to `steps` rows (None: all)."""

    def allocation(a: MemoryAllocation) -> dict[str, Any]:
        return {"ts_us": a.at_us, "step": a.step, "bytes": a.nbytes, "op": a.op}

    def device(d: MemoryDevice) -> dict[str, Any]:
        churn = d.churn if steps is None else d.churn[:steps]
        return {
            "device": d.device,
            "events": d.events,
            "relative": d.relative,
            "peak_bytes": d.peak_bytes,
            "peak": allocation(d.peak),
            "peak_reserved_bytes": d.peak_reserved_bytes,
            "largest": [allocation(a) for a in d.largest],
            "churn": [asdict(c) for c in churn],
            "trimmed": {"churn": len(d.churn) - len(churn)},
        }

    return {"devices": [device(d) for d in doc.devices]}
