"""What the trace says about itself, outside the events: the top-level object
(schema, distributed info, base time, trace name) and its `deviceProperties`,
turned into `TraceMeta` and `Device`s once all events are read.
"""

from __future__ import annotations

from typing import Any

from .model import Device, TraceMeta
from .schema import TopLevel

#: The run settings `kinetoscope profile` writes into the trace's top-level
#: "kinetoscope" object (capture/runner.py, capture/script.py), in reading order.
RUN_KEYS = (
    "workload",
    "script",
    "args",
    "params",
    "dtype",
    "compile",
    "warmup_iters",
    "schedule",
    "cycle",
    "device",
    "activities",
    "record_shapes",
    "profile_memory",
    "with_stack",
    "step_source",
    "tag",
    "written_at",
)


def recorded_versions(meta: TraceMeta) -> dict[str, Any]:
    """Every version the file records: the runtime's (Kineto's top-level keys) and the
    ones kinetoscope wrote beside them (`torch_version`, `kinetoscope_version`). The one
    source `summary`, `explain` and `diff` print."""
    versions = dict(meta.versions)
    for key, value in (meta.kinetoscope or {}).items():
        if key.endswith("_version") and key not in versions:
            versions[key] = value
    return versions


def run_metadata(meta: TraceMeta) -> dict[str, Any]:
    """How `kinetoscope profile` recorded the run (workload, size, dtype, warm-up count,
    compile mode, schedule, device, ...), `RUN_KEYS` that the file holds; {} for a trace
    kinetoscope did not record."""
    own = meta.kinetoscope or {}
    return {key: own[key] for key in RUN_KEYS if key in own}


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
