"""The trace's versions and kinetoscope's own run settings, worded once for every format.

`summary` and `explain` (text, Markdown, HTML) print these lines; the JSON outputs
carry the dicts themselves (`trace.versions`, `trace.run`). Both come from
`trace.top_meta` (`recorded_versions`, `run_metadata`), so a version or a warm-up
count the file records shows in every output or in none.
"""

from __future__ import annotations

from typing import Any


def version_parts(versions: dict[str, Any]) -> list[str]:
    """`torch 2.13.0+cpu`, `cuda runtime 12040`: one phrase per recorded version."""
    return [
        f"{key.removesuffix('_version').replace('_', ' ')} {value}"
        for key, value in versions.items()
    ]


def versions_line(versions: dict[str, Any]) -> str:
    """`torch 2.13.0+cpu, cuda runtime 12040`; "" when none recorded."""
    return ", ".join(version_parts(versions))


def _params(params: Any) -> list[str]:
    if not isinstance(params, dict):
        return []
    return [f"{key} {value}" for key, value in params.items() if not isinstance(value, bool)] + [
        key for key, value in params.items() if value is True
    ]


def _schedule(schedule: Any) -> str | None:
    if not isinstance(schedule, dict):
        return None
    parts = [f"{key} {schedule[key]}" for key in ("wait", "warmup", "active", "repeat")]
    return "schedule " + ", ".join(p for p in parts if not p.endswith(" None"))


def run_parts(run: dict[str, Any]) -> list[str]:
    """The run settings as short phrases, in `top_meta.RUN_KEYS` order:
    `workload matmul_add`, `size 256`, `fp32`, `eager (no torch.compile)`,
    `3 warm-up iterations before profiling`, `schedule wait 1, warmup 1, active 3, repeat 1`."""
    if not run:
        return []
    parts: list[str] = []
    if run.get("workload") == "script" and run.get("script"):
        parts.append(f"script {run['script']}")
    elif run.get("workload"):
        parts.append(f"workload {run['workload']}")
    parts += _params(run.get("params"))
    if run.get("dtype"):
        parts.append(str(run["dtype"]))
    if "compile" in run:
        mode = run["compile"]
        parts.append(f"torch.compile mode {mode}" if mode else "eager (no torch.compile)")
    if isinstance(run.get("warmup_iters"), int):
        n = run["warmup_iters"]
        parts.append(
            f"{n} warm-up iteration{'s' if n != 1 else ''} before profiling"
            if n
            else "recorded cold (no warm-up iterations)"
        )
    schedule = _schedule(run.get("schedule"))
    if schedule:
        parts.append(schedule)
    if isinstance(run.get("cycle"), int):  # counted from 1 in the metadata (capture.session)
        parts.append(f"cycle {run['cycle']}")
    device = run.get("device")
    if isinstance(device, dict) and device.get("name"):
        parts.append(f"device {device['name']}")
    if run.get("step_source"):
        parts.append(f"steps are {run['step_source']}")
    return parts


def run_line(run: dict[str, Any]) -> str:
    """`run_parts` joined; "" for a trace kinetoscope did not record."""
    return "; ".join(run_parts(run))
