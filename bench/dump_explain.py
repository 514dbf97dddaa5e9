"""Dump `kinetoscope explain --format json` for every corpus trace into a folder.

A speed or structural change must not change the report: run this before and after
the change (same corpus path, so the paths in the reports agree) and `diff -r` the
two folders. Each trace runs in a fresh interpreter, as a user's command does.
`--diff` also dumps `kinetoscope diff --format json` for each trace against the
next one in sorted order (the last against the first).

    PYTHONPATH=src python bench/dump_explain.py /tmp/explain_before --diff
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
    parser.add_argument("--diff", action="store_true", help="also dump diff of neighbours")
    args = parser.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    traces = sorted(p for p in args.corpus.rglob("*.json*") if p.is_file())
    for trace in traces:
        name = str(trace.relative_to(args.corpus)).replace("/", "__")
        _dump(args.out / f"{name}.out", ["explain", "--format", "json", str(trace)])
    if args.diff:
        for before, after in zip(traces, traces[1:] + traces[:1], strict=True):
            name = str(before.relative_to(args.corpus)).replace("/", "__")
            command = ["diff", "--format", "json", str(before), str(after)]
            _dump(args.out / f"{name}.diff.out", command)
    print(f"{len(traces)} traces -> {args.out}")
    return 0


def _dump(target: Path, command: list[str]) -> None:
    """Run one kinetoscope command in a fresh interpreter; its output and exit code to `target`."""
    with target.open("wb") as sink:
        done = subprocess.run(
            [sys.executable, "-m", "kinetoscope", *command],
            stdout=sink,
            stderr=subprocess.STDOUT,
            check=False,
        )
        sink.write(f"\n[exit {done.returncode}]\n".encode())
    print(f"{target.name} (exit {done.returncode})", flush=True)


if __name__ == "__main__":
    sys.exit(main())
