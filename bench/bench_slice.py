"""`kinetoscope slice` of a large trace to a few steps: wall time and peak RSS.

Runs the CLI in a fresh interpreter and reads its peak RSS and CPU time from
`os.wait4`, as bench/bench_load.py does. Build the input first with
bench/make_large.py (ResNet copies: 5 ProfilerSteps per ~12 MB copy).

    python bench/make_large.py --sizes 1000 --out /tmp/large
    PYTHONPATH=src nice -n 19 python bench/bench_slice.py \
        /tmp/large/resnet_train_ns_1000MB.json --steps 201-203
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("trace", type=Path)
    parser.add_argument("--steps", default="201-203")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "slice.json.gz"
        cmd = [sys.executable, "-m", "kinetoscope", "slice", str(args.trace),
               "--steps", args.steps, "-o", str(out)]  # fmt: skip
        start = time.perf_counter()
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - start
        print(proc.stdout.read().decode().strip())
        if status:
            sys.exit(f"slice failed with status {status}")
        size = args.trace.stat().st_size
        print(f"input {size / 1e6:.0f} MB, load average {os.getloadavg()[0]:.1f}")
        print("| input | steps | wall (s) | CPU (s) | MB/s (2 passes) | peak RSS (MB) | output |")
        print("|---|---|---|---|---|---|---|")
        print(f"| {size / 1e6:.0f} MB | {args.steps} | {wall:.1f} | "
              f"{usage.ru_utime + usage.ru_stime:.1f} | {size / 1e6 / wall:.0f} | "
              f"{usage.ru_maxrss / 1024:.0f} | {out.stat().st_size / 1e6:.1f} MB |")  # fmt: skip


if __name__ == "__main__":
    main()
