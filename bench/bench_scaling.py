"""Does `summary` / `explain` time grow linearly in events and in steps?

Three kinds of trace from `bench/make_large.py` (the ResNet source, 5 steps a copy):
the base (N copies in time), twice the steps (2N copies in time: events and steps
double) and twice the events per step (N copies, each step holding 2 copies side by
side: events double, steps stay). Each command runs in a fresh interpreter, the
variants in turn (base, steps x2, events x2, base, ...), and the best CPU and wall
time of `--repeat` runs is kept; a ratio near 2 is linear, near 4 quadratic. CPU
time (user + sys of the process and its load worker, `os.wait4`) is the figure to
compare on a shared machine; the interpreter's start-up (about 0.3 s) is in both,
so small files read below 2.

    python bench/make_large.py --copies 4 8 && python bench/make_large.py --copies 4 --wide 2
    PYTHONPATH=src python bench/bench_scaling.py --copies 4
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from pathlib import Path

OUT = Path(__file__).resolve().parent / "out"


def run_once(command: list[str]) -> tuple[float, float, float]:
    """(wall s, CPU s, peak RSS MiB) of one fresh process and its children."""
    start = time.perf_counter()
    proc = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - start
    if os.waitstatus_to_exitcode(status) != 0:
        sys.exit(f"error: {' '.join(command)} failed")
    return wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--copies", type=int, default=4, help="copies in time of the base")
    parser.add_argument("--out", type=Path, default=OUT)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--commands", nargs="+", default=["summary", "explain"])
    args = parser.parse_args(argv)
    stem = args.out / "resnet_train_ns_"
    files = {
        "base": Path(f"{stem}{args.copies}copies.json"),
        "steps x2": Path(f"{stem}{2 * args.copies}copies.json"),
        "events x2": Path(f"{stem}{args.copies}copies_wide2.json"),
    }
    for path in files.values():
        if not path.exists():
            sys.exit(f"error: {path} missing: run the make_large.py commands in --help")
    print(f"load average before: {Path('/proc/loadavg').read_text().strip()}")
    for cmd in args.commands:
        best: dict[str, tuple[float, float, float]] = {}
        for _ in range(args.repeat):
            for label, path in files.items():
                got = run_once([sys.executable, "-m", "kinetoscope", cmd, "--format", "json",
                                str(path)])  # fmt: skip
                old = best.get(label, (float("inf"),) * 3)
                best[label] = (min(old[0], got[0]), min(old[1], got[1]), got[2])
        base_wall, base_cpu, _ = best["base"]
        for label, (wall, cpu, rss) in best.items():
            size = files[label].stat().st_size / 1e6
            print(
                f"{cmd:8} {label:10} {files[label].name:40} {size:6.1f} MB  wall {wall:6.2f} s "
                f"(x{wall / base_wall:.2f})  CPU {cpu:6.2f} s (x{cpu / base_cpu:.2f})  "
                f"peak RSS {rss:6.0f} MiB"
            )
    print(f"load average after: {Path('/proc/loadavg').read_text().strip()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
