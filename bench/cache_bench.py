"""Cold against warm: what the trace cache (`trace/cache.py`) saves a second command.

For each command, three runs of `python -m kinetoscope COMMAND FILE`, one at a time,
each a fresh subprocess (start-up and imports included), against a private cache folder:

- `no cache`: `KINETOSCOPE_NO_CACHE=1`, as before the cache existed;
- `cold`: the cache emptied first: parse, then write the entry;
- `warm`: the entry written by the cold run: columns mapped, no parse.

Wall time is taken around the subprocess, peak RSS from its own rusage (`os.wait4`;
the split loader's worker is counted by the caller's children rusage, so a cold or
no-cache run's peak is the larger of the two processes, not their sum). The cache's
size on disk is `du` of the entry after the cold run. Output goes to /dev/null.

    python bench/make_large.py --sizes 200 --out /tmp/large
    PYTHONPATH=src python bench/cache_bench.py /tmp/large/resnet_train_ns_200MB.json
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

COMMANDS = ("explain", "table", "summary")


def run(command: str, path: Path, env: dict[str, str]) -> tuple[float, int]:
    """(wall seconds, peak RSS bytes) of one command in a fresh process."""
    start = time.perf_counter()
    child = subprocess.Popen(
        [sys.executable, "-m", "kinetoscope", command, str(path)],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    _, status, usage = os.wait4(child.pid, 0)
    wall = time.perf_counter() - start
    err = child.stderr.read().decode(errors="replace") if child.stderr else ""
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"{command} {path} failed: {err.strip()}")
    return wall, usage.ru_maxrss * 1024


def disk_bytes(folder: Path) -> int:
    return sum(f.stat().st_size for f in folder.rglob("*") if f.is_file())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("traces", type=Path, nargs="+")
    parser.add_argument("--commands", nargs="+", default=list(COMMANDS))
    args = parser.parse_args()
    folder = Path(tempfile.mkdtemp(prefix="kinetoscope-cache-bench-"))
    base = {**os.environ, "KINETOSCOPE_CACHE": str(folder), "KINETOSCOPE_CACHE_SIZE": "64GB"}
    print("| trace | command | run | wall s | peak RSS MB | cache on disk MB |")
    print("|---|---|---|---:|---:|---:|")
    try:
        for path in args.traces:
            size = path.stat().st_size / 1e6
            for command in args.commands:
                shutil.rmtree(folder, ignore_errors=True)
                rows = []
                for label, env in (
                    ("no cache", {**base, "KINETOSCOPE_NO_CACHE": "1"}),
                    ("cold", base),
                    ("warm", base),
                ):
                    wall, rss = run(command, path, env)
                    on_disk = disk_bytes(folder) / 1e6 if folder.exists() else 0.0
                    rows.append((label, wall, rss, on_disk))
                for label, wall, rss, on_disk in rows:
                    print(
                        f"| {path.name} ({size:.0f} MB) | {command} | {label} | {wall:.2f} "
                        f"| {rss / 1e6:.0f} | {on_disk:.0f} |",
                        flush=True,
                    )
    finally:
        shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    main()
