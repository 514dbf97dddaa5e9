"""Multi-rank loading: `explain` on a directory of rank traces with 1 vs 2 processes.

Times `kinetoscope.multirank.summarize_ranks` (each worker loads one rank's
trace, measures it and runs the rules, returning small summaries) and, apart,
the bare loading of the files, with `jobs` 1 (in-process) and 2 (process
pool). Median of `--repeat` runs, fresh pool each run (what one CLI call pays).

    PYTHONPATH=src python bench/bench_multirank.py [DIR] [--repeat 7]
"""

from __future__ import annotations

import argparse
import os
import platform
import resource
import statistics
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import kinetoscope
from kinetoscope.multirank import summarize_ranks, trace_files

DEFAULT = Path(__file__).resolve().parents[1].parent / "shared/traces/multirank/dlrm_8ranks"


def _load(path: str) -> int:
    return len(kinetoscope.load(path))


def load_only(files: list[str], jobs: int) -> None:
    if jobs <= 1:
        for f in files:
            _load(f)
    else:
        with ProcessPoolExecutor(max_workers=jobs) as pool:
            list(pool.map(_load, files))


def _cpu_seconds() -> float:
    """CPU time of this process and its finished children (the pool's workers)."""
    own = resource.getrusage(resource.RUSAGE_SELF)
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + kids.ru_utime + kids.ru_stime


def timed(fn, repeat: int) -> tuple[float, float]:
    """Median wall seconds and median CPU seconds of `repeat` calls."""
    wall, cpu = [], []
    for _ in range(repeat):
        cpu0, start = _cpu_seconds(), time.perf_counter()
        fn()
        wall.append(time.perf_counter() - start)
        cpu.append(_cpu_seconds() - cpu0)
    return statistics.median(wall), statistics.median(cpu)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("dir", nargs="?", type=Path, default=DEFAULT)
    parser.add_argument("--repeat", type=int, default=7)
    args = parser.parse_args()
    files = [str(p) for p in trace_files([args.dir])]
    size = sum(os.path.getsize(f) for f in files) / 2**20
    print(f"{len(files)} files, {size:.1f} MiB, {platform.python_version()}, "
          f"{os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.1f}")  # fmt: skip
    summarize_ranks([args.dir], jobs=1)  # warm the page cache and imports
    print(
        "| work | jobs 1 wall (s) | jobs 2 wall (s) | speed-up | jobs 1 CPU (s) | jobs 2 CPU (s) |"
    )
    print("|---|---|---|---|---|---|")
    for label, fn in (
        ("load only", lambda j: load_only(files, j)),
        ("load + measure + rules", lambda j: summarize_ranks([args.dir], jobs=j)),
    ):
        one, one_cpu = timed(lambda fn=fn: fn(1), args.repeat)
        two, two_cpu = timed(lambda fn=fn: fn(2), args.repeat)
        cells = [label, f"{one:.3f}", f"{two:.3f}", f"{one / two:.2f}x"]
        print("| " + " | ".join([*cells, f"{one_cpu:.3f}", f"{two_cpu:.3f}"]) + " |")
    print(f"load average after: {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
