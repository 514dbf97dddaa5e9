"""A pytest plugin that records each test's CPU time, to find what makes the suite slow.

Wall-clock durations (`--durations`) on a shared 2-core machine say as much about the
other workers as about the test; CPU time (this process's, and its children's once
reaped) is what a test costs the machine. One line per test phase to
`$KINETOSCOPE_TEST_CPU.<worker>`: nodeid, phase, wall s, own CPU s, children CPU s.

    KINETOSCOPE_TEST_CPU=/tmp/cpu PYTHONPATH=bench python -m pytest -p pytest_cpu_times -n 4
    python bench/pytest_cpu_times.py /tmp/cpu     # CPU by file, largest first
"""

from __future__ import annotations

import os
import resource
import sys
import time
from collections import defaultdict
from pathlib import Path

import pytest


def _cpu() -> tuple[float, float]:
    own = resource.getrusage(resource.RUSAGE_SELF)
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime, children.ru_utime + children.ru_stime


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item, nextitem):
    target = os.environ.get("KINETOSCOPE_TEST_CPU")
    if not target:
        yield
        return
    wall, (own, children) = time.perf_counter(), _cpu()
    yield
    own2, children2 = _cpu()
    worker = os.environ.get("PYTEST_XDIST_WORKER", "main")
    with open(f"{target}.{worker}", "a") as log:
        log.write(
            f"{item.nodeid}\t{time.perf_counter() - wall:.2f}\t{own2 - own:.2f}\t"
            f"{children2 - children:.2f}\n"
        )


def _report(prefix: str) -> None:
    by_file: dict[str, list[float]] = defaultdict(lambda: [0.0, 0.0, 0.0, 0])
    for log in Path(prefix).parent.glob(Path(prefix).name + ".*"):
        for line in log.read_text().splitlines():
            nodeid, wall, own, children = line.split("\t")
            row = by_file[nodeid.split("::")[0]]
            row[0] += float(wall)
            row[1] += float(own)
            row[2] += float(children)
            row[3] += 1
    total = sum(r[1] + r[2] for r in by_file.values())
    head = f"{'cpu s':>8} {'own':>7} {'child':>7} {'wall s':>8} tests file"
    print(f"{head}  (total CPU {total:.0f} s)")
    for name, (wall, own, children, count) in sorted(
        by_file.items(), key=lambda kv: -(kv[1][1] + kv[1][2])
    )[:60]:
        print(f"{own + children:8.1f} {own:7.1f} {children:7.1f} {wall:8.1f} {count:5d} {name}")


if __name__ == "__main__":
    _report(sys.argv[1])
