"""Time and peak memory of loading a large trace: kinetoscope vs HolisticTraceAnalysis.

Each measurement runs in a fresh subprocess, one at a time; wall time is taken
around the subprocess and peak RSS (and CPU time) from that child's own rusage
(`os.wait4`), so interpreter start-up and imports are included for both tools.

kinetoscope runs the `summary` command (`kinetoscope.cli.main`, as
`python -m kinetoscope summary FILE` does; `--command explain` runs every rule
instead, output to /dev/null) when it exists, else
`kinetoscope.load(FILE)` + `analysis.steps.step_stats(trace)`. A large plain file
is loaded by two processes (trace/split.py): its peak RSS is the parent's plus
the worker's (both read with getrusage in the parent, at exit; pages
shared after the fork are counted twice, so the sum overstates).
HTA runs `TraceAnalysis(trace_dir=DIR)` + `get_temporal_breakdown()` under its
own interpreter (`--hta-python`; HTA is not a kinetoscope dependency), on a
temporary directory holding a symlink to the same file.

    python bench/make_large.py --sizes 100 200 500 1000
    python bench/bench_load.py bench/out/resnet_train_ns_{100,200,500,1000}MB.json \\
        --hta-python /work/benchvenv/bin/python --hta-max-mb 250
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]

_KINETOSCOPE_LOAD = """
import sys
import kinetoscope
from kinetoscope.analysis.steps import step_stats
trace = kinetoscope.load(sys.argv[1])
stats = step_stats(trace)
print(len(trace), "events,", len(stats), "steps")
"""

_KINETOSCOPE_CLI = """
import resource, sys
from kinetoscope.cli import main
command, path = sys.argv[2], sys.argv[1]
sys.argv = ["kinetoscope", command, path] + (["-o", "/dev/null"] if command == "explain" else [])
try:
    main()
finally:
    own = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    worker = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    print("peak-rss-kib", own, worker, file=sys.stderr)
"""
_PEAK_RSS = "peak-rss-kib "

_HTA = """
import os, sys, tempfile, time
from hta.trace_analysis import TraceAnalysis
folder = tempfile.mkdtemp()
name = os.path.basename(sys.argv[1])
os.symlink(os.path.abspath(sys.argv[1]), os.path.join(folder, name))
analyzer = TraceAnalysis(trace_dir=folder)
breakdown = analyzer.get_temporal_breakdown(visualize=False)
print(breakdown.to_string())
"""


def has_summary_command() -> bool:
    try:
        from kinetoscope.cli import COMMANDS
    except ImportError:
        return False
    return "summary" in COMMANDS


def kinetoscope_command(path: Path, command: str) -> list[str]:
    if has_summary_command():
        return [sys.executable, "-c", _KINETOSCOPE_CLI, str(path), command]
    return [sys.executable, "-c", _KINETOSCOPE_LOAD, str(path)]


def measure(command: list[str], env: dict | None = None) -> dict:
    """Run `command` alone; wall seconds, CPU seconds and peak RSS (bytes) of that child."""
    start = time.perf_counter()
    with tempfile.TemporaryFile() as out:
        child = subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT, env=env)
        _, status, usage = os.wait4(child.pid, 0)
        wall = time.perf_counter() - start
        child.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        output = out.read().decode(errors="replace")
    # Linux reports KiB; the child's own peak plus its worker's when it reports them
    own, worker = usage.ru_maxrss, 0
    for line in output.splitlines():
        if line.startswith(_PEAK_RSS):
            own, worker = map(int, line.split()[1:])
    return {
        "ok": child.returncode == 0,
        "wall_s": wall,
        "cpu_s": usage.ru_utime + usage.ru_stime,  # includes the reaped worker's
        "peak_rss_bytes": (own + worker) * 1024,
        "worker_peak_rss_bytes": worker * 1024,
        "output_tail": output[-600:],
    }


def json_size(path: Path) -> int:
    """Bytes of JSON text (decompressed size for .gz)."""
    if path.suffix != ".gz":
        return path.stat().st_size
    with gzip.open(path, "rb") as handle:
        return sum(len(block) for block in iter(lambda: handle.read(1 << 24), b""))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("files", type=Path, nargs="+")
    parser.add_argument("--hta-python", help="interpreter with HolisticTraceAnalysis installed")
    parser.add_argument(
        "--hta-max-mb",
        type=float,
        default=250,
        help="skip HTA above this JSON size (it needs about 8x the file in RAM)",
    )
    parser.add_argument(
        "--repeat", type=int, default=1, help="kinetoscope runs per file (best kept)"
    )
    parser.add_argument("--json", type=Path, help="write all results here")
    parser.add_argument(
        "--command",
        choices=("summary", "explain"),
        default="summary",
        help="the kinetoscope command to time (explain: every rule)",
    )
    args = parser.parse_args(argv)

    hta_python = args.hta_python
    if hta_python and measure([hta_python, "-c", "import hta.trace_analysis"])["ok"] is False:
        print(f"HTA not importable under {hta_python}: skipping HTA", file=sys.stderr)
        hta_python = None
    elif not hta_python:
        print("no --hta-python given: skipping HTA", file=sys.stderr)

    env = dict(os.environ, PYTHONPATH=str(REPO / "src"))
    mode = args.command if has_summary_command() else "load+step_stats"
    print(f"kinetoscope: {mode} ({sys.executable})", file=sys.stderr)
    results = []
    for path in args.files:
        size = json_size(path)
        runs = [measure(kinetoscope_command(path, args.command), env) for _ in range(args.repeat)]
        best = min(runs, key=lambda r: r["wall_s"])
        if not best["ok"]:
            print(f"kinetoscope failed on {path}:\n{best['output_tail']}", file=sys.stderr)
        row = {
            "file": str(path),
            "json_bytes": size,
            "file_bytes": path.stat().st_size,
            "kinetoscope_mode": mode,
            "kinetoscope": best,
            "kinetoscope_walls": [r["wall_s"] for r in runs],
        }
        if hta_python and size <= args.hta_max_mb * 1e6:
            row["hta"] = measure([hta_python, "-c", _HTA, str(path)])
            if not row["hta"]["ok"]:
                print(f"HTA failed on {path}:\n{row['hta']['output_tail']}", file=sys.stderr)
        results.append(row)
        print(_line(row), flush=True)
    if args.json:
        args.json.write_text(json.dumps(results, indent=1))
    print()
    print(table(results))
    return 0


def _line(row: dict) -> str:
    k = row["kinetoscope"]
    text = (
        f"{Path(row['file']).name}: {row['json_bytes'] / 1e6:.0f} MB JSON, kinetoscope "
        f"{k['wall_s']:.2f} s wall / {k['cpu_s']:.2f} s CPU, {k['peak_rss_bytes'] / 1e6:.0f} MB"
    )
    if "hta" in row:
        h = row["hta"]
        text += (
            f"; HTA {h['wall_s']:.1f} s wall / {h['cpu_s']:.1f} s CPU, "
            f"{h['peak_rss_bytes'] / 1e6:.0f} MB"
        )
    return text


def table(results: list[dict]) -> str:
    """The Markdown table docs/benchmarks.md shows."""
    lines = [
        "| file | JSON size | kinetoscope wall (CPU) | MB/s | peak RSS, parent + worker (x file) "
        "| HTA wall (CPU) | HTA peak RSS (x file) | speed-up |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for row in results:
        mb = row["json_bytes"] / 1e6
        k = row["kinetoscope"]
        cells = [
            Path(row["file"]).name,
            f"{mb:.0f} MB",
            f"{k['wall_s']:.2f} s ({k['cpu_s']:.2f} s)",
            f"{mb / k['wall_s']:.0f}",
            f"{k['peak_rss_bytes'] / 1e6:.0f} MB ({k['peak_rss_bytes'] / row['json_bytes']:.2f}x)"
            + (
                f", worker {k['worker_peak_rss_bytes'] / 1e6:.0f} MB"
                if k.get("worker_peak_rss_bytes")
                else ""
            ),
        ]
        if "hta" in row and row["hta"]["ok"]:
            h = row["hta"]
            ratio = h["peak_rss_bytes"] / row["json_bytes"]
            cells += [
                f"{h['wall_s']:.1f} s ({h['cpu_s']:.1f} s)",
                f"{h['peak_rss_bytes'] / 1e6:.0f} MB ({ratio:.1f}x)",
                f"{h['wall_s'] / k['wall_s']:.1f}x",
            ]
        else:
            cells += ["not run", "", ""]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


if __name__ == "__main__":
    sys.exit(main())
