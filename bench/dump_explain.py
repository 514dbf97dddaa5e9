"""Dump `kinetoscope explain --format json` for every corpus trace into a folder.

A speed change must not change the report: run this before and after the change
(same checkout path, so the version field and paths agree) and `diff -r` the two
folders. Each trace runs in a fresh interpreter, as a user's command does.

    PYTHONPATH=src python bench/dump_explain.py /tmp/explain_before
"""

from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path

CORPUS = Path(__file__).resolve().parent.parent / "tests" / "data" / "traces"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", type=Path, help="folder for one JSON report per trace")
    parser.add_argument("--corpus", type=Path, default=CORPUS)
    args = parser.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    traces = sorted(p for p in args.corpus.rglob("*.json*") if p.is_file())
    for trace in traces:
        target = args.out / (str(trace.relative_to(args.corpus)).replace("/", "__") + ".out")
        with target.open("wb") as sink:
            done = subprocess.run(
                [sys.executable, "-m", "kinetoscope", "explain", "--format", "json", str(trace)],
                stdout=sink,
                stderr=subprocess.STDOUT,
                check=False,
            )
        sink_note = "" if done.returncode == 0 else f" (exit {done.returncode})"
        print(f"{trace.relative_to(args.corpus)}{sink_note}", flush=True)
    print(f"{len(traces)} traces -> {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
