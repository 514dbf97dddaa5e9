"""Multi-rank loading: `explain` on a directory of rank traces with 1 vs 2 processes.

Times `kinetoscope.ranks.multirank.summarize_ranks` (each worker loads one rank's
trace, measures it and runs the rules, returning small summaries) and, apart,
the bare loading of the files, with `jobs` 1 (in-process) and 2 (process
pool). Median of `--repeat` runs, the two modes alternating, a fresh pool each
run (what one CLI call pays).

    PYTHONPATH=src python bench/bench_multirank.py [DIR] [--repeat 15]
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
from kinetoscope.ranks.multirank import summarize_ranks, trace_files

DEFAULT = Path(__file__).resolve().parents[1] / "tests/data/traces/multirank/dlrm_8ranks"


def _load(path: str) -> int:
    return len(kinetoscope.load(path))


def load_only(files: list[str], jobs: int) -> None:
    if jobs <= 1:
        for f in files:
            _load(f)
    else:
        with ProcessPoolExecutor(max_workers=jobs) as pool:
            list(pool.map(_load, files, chunksize=-(-len(files) // jobs)))


def _cpu_seconds() -> float:
    """CPU time of this process and its finished children (the pool's workers)."""
    own = resource.getrusage(resource.RUSAGE_SELF)
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + kids.ru_utime + kids.ru_stime


def timed(fn, repeat: int) -> dict[int, tuple[float, float]]:
    """Per jobs value (1, 2): median wall and CPU seconds of `repeat` calls.

    The two modes alternate within each repetition, so a change in the machine's
    load during the run hits both alike.
    """
    wall: dict[int, list[float]] = {1: [], 2: []}
    cpu: dict[int, list[float]] = {1: [], 2: []}
    for _ in range(repeat):
        for jobs in (1, 2):
            cpu0, start = _cpu_seconds(), time.perf_counter()
            fn(jobs)
            wall[jobs].append(time.perf_counter() - start)
            cpu[jobs].append(_cpu_seconds() - cpu0)
    return {j: (statistics.median(wall[j]), statistics.median(cpu[j])) for j in (1, 2)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("dir", nargs="?", type=Path, default=DEFAULT)
    parser.add_argument("--repeat", type=int, default=15)
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
        result = timed(fn, args.repeat)
        (one, one_cpu), (two, two_cpu) = result[1], result[2]
        cells = [label, f"{one:.3f}", f"{two:.3f}", f"{one / two:.2f}x"]
        print("| " + " | ".join([*cells, f"{one_cpu:.3f}", f"{two_cpu:.3f}"]) + " |")
    print(f"load average after: {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
