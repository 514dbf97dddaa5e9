"""How busy the machine was while a run was profiled (Linux schedstat).

A trace says how long each op took, not whether its thread held a CPU meanwhile: on
a loaded machine an op is descheduled and its time is the other processes' share of
the CPUs (a 256x256 `aten::sqrt` at 8.5 ms a call). The kernel counts, per thread,
the time it was runnable but waiting for a CPU (`/proc/self/task/*/schedstat`,
second field). Capture stores that wait over each profiled cycle in the trace's
`"kinetoscope"` metadata, `tune` over its timed blocks, and the capture grade
(`analysis.account.capture`) reads it.
"""

from __future__ import annotations

import os
import time
from pathlib import Path


def run_queue_seconds() -> float | None:
    """Seconds this process's threads have spent runnable but waiting for a CPU (Linux
    schedstat; None where the kernel does not provide it)."""
    total, seen = 0, False
    for stat in Path("/proc/self/task").glob("*/schedstat"):
        try:
            total += int(stat.read_text().split()[1])
            seen = True
        except (OSError, IndexError, ValueError):  # a thread that ended meanwhile
            continue
    return total / 1e9 if seen else None


class LoadMeter:
    """The run-queue wait between two readings, as the `machine_load` metadata entry."""

    def __init__(self) -> None:
        self._mark = (time.monotonic(), run_queue_seconds())

    def reading(self) -> dict | None:
        """`{"run_queue_s", "wall_s", "cpus"}` since the last reading (None without
        schedstat); the next reading starts here."""
        now, queued = time.monotonic(), run_queue_seconds()
        (then, before), self._mark = self._mark, (now, queued)
        if queued is None or before is None or now <= then:
            return None
        return {
            "run_queue_s": round(queued - before, 6),
            "wall_s": round(now - then, 6),
            "cpus": os.cpu_count(),
        }
