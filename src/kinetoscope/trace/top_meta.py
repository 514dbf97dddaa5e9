"""What the trace says about itself, outside the events: the top-level object
(schema, distributed info, base time, trace name) and its `deviceProperties`,
turned into `TraceMeta` and `Device`s once all events are read.
"""

from __future__ import annotations

from .model import Device, TraceMeta
from .schema import TopLevel


def trace_meta(top: TopLevel) -> TraceMeta:
    versions = {
        key: getattr(top, key)
        for key in (
            "cuda_runtime_version",
            "cuda_driver_version",
            "cupti_version",
            "hip_runtime_version",
            "hip_driver_version",
            "roctracer_version",
        )
        if getattr(top, key) is not None
    }
    base = top.baseTimeNanoseconds
    profiler_log = {
        level: [str(line) for line in lines]
        for level, lines in (("INFO", top.INFO), ("WARNING", top.WARNING), ("ERROR", top.ERROR))
        if isinstance(lines, list)
    }
    return TraceMeta(
        schema_version=top.schemaVersion,
        base_time_ns=int(base) if isinstance(base, (int, float)) else None,
        display_time_unit=top.displayTimeUnit if isinstance(top.displayTimeUnit, str) else None,
        trace_name=top.traceName if isinstance(top.traceName, str) else None,
        distributed=top.distributedInfo if isinstance(top.distributedInfo, dict) else None,
        versions=versions,
        kinetoscope=top.kinetoscope if isinstance(top.kinetoscope, dict) else None,
        profiler_log=profiler_log,
    )


def devices_of(top: TopLevel) -> list[Device]:
    out = []
    for prop in top.deviceProperties or []:
        name = str(prop.name) if prop.name is not None else "unknown device"
        vendor = (
            "AMD"
            if ("AMD" in name or "Instinct" in name or "Radeon" in name)
            else (
                "NVIDIA"
                if any(k in name for k in ("NVIDIA", "Tesla", "GeForce", "Quadro"))
                else None
            )
        )
        if vendor is None and (top.hip_runtime_version is not None):
            vendor = "AMD"
        cc = None
        if isinstance(prop.computeMajor, int) and isinstance(prop.computeMinor, int):
            cc = f"{prop.computeMajor}.{prop.computeMinor}"
        out.append(
            Device(
                id=int(prop.id) if isinstance(prop.id, int) else len(out),
                name=name,
                vendor=vendor,
                sm_count=prop.numSms if isinstance(prop.numSms, int) else None,
                memory_bytes=prop.totalGlobalMem if isinstance(prop.totalGlobalMem, int) else None,
                compute_capability=cc,
            )
        )
    return out
