"""Capture overhead: step time under `kinetoscope.profile` vs plain `torch.profiler`.

The same workload step runs under both, with the same schedule and activities;
the plain run uses torch's own `tensorboard_trace_handler`. Rounds alternate
between the two so machine noise hits both alike. Reported per mode: the median
wall time of the recorded (active) iterations, and the time of the final
`step()` that exports the cycle (ours also writes the table and splices the
metadata in). Target: our active-step time within 5% of plain torch.profiler's.

    python bench/capture_overhead.py [--workload matmul_add --size 256]
        [--active 20 --rounds 7 --threads 1] [--record]

`--record` writes the results into docs/benchmarks.md under "Capture overhead"
(replacing that section only).
"""

from __future__ import annotations

import argparse
import platform
import statistics
import tempfile
import time
from pathlib import Path

import torch

import kinetoscope
from kinetoscope.capture.device import activities, resolve_device, resolve_dtype, synchronize
from kinetoscope.capture.runner import workload_params
from kinetoscope.capture.workloads import Context, load_workload

DOC = Path(__file__).resolve().parents[1] / "docs" / "benchmarks.md"
HEADING = "## Capture overhead"


def timed_loop(step, prof, device, total: int, active: range) -> tuple[list[float], float]:
    """Run `total` iterations; wall times (us) of the active ones, and of the exporting step."""
    times, export_us = [], 0.0
    for i in range(total):
        start = time.perf_counter()
        step()
        synchronize(torch, device)
        if i == total - 1:
            times.append((time.perf_counter() - start) * 1e6)
            start = time.perf_counter()
            prof.step()  # the cycle ends here: on_trace_ready exports
            export_us = (time.perf_counter() - start) * 1e6
            break
        prof.step()
        if i in active:
            times.append((time.perf_counter() - start) * 1e6)
    return times, export_us


def run_plain(step, device, wait, warmup, active, out: Path):
    schedule = torch.profiler.schedule(wait=wait, warmup=warmup, active=active, repeat=1)
    with torch.profiler.profile(
        activities=activities(torch, device),
        schedule=schedule,
        on_trace_ready=torch.profiler.tensorboard_trace_handler(str(out)),
    ) as prof:
        return timed_loop(step, prof, device, wait + warmup + active, range(wait + warmup, 10**9))


def run_ours(step, device, wait, warmup, active, out: Path):
    with kinetoscope.profile(out=out, steps=(wait, warmup, active), device=device) as prof:
        return timed_loop(step, prof, device, wait + warmup + active, range(wait + warmup, 10**9))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workload", default="matmul_add")
    parser.add_argument("--size", type=int, default=256)
    parser.add_argument("--active", type=int, default=20)
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--threads", type=int, default=1, help="torch CPU threads (noise)")
    parser.add_argument("--record", action="store_true", help="write docs/benchmarks.md")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    device = resolve_device(torch, "auto")
    dtype_name, dtype = resolve_dtype(torch, None, device)
    module = load_workload(args.workload)
    params = workload_params(module, {"size": args.size})
    step = module.build(params, Context(torch, device.type, dtype, lambda fn: fn))
    for _ in range(20):
        step()
    synchronize(torch, device)
    modes = {"plain torch.profiler": run_plain, "kinetoscope.profile": run_ours}
    steps = {m: [] for m in modes}
    exports = {m: [] for m in modes}
    with tempfile.TemporaryDirectory() as tmp:
        for r in range(args.rounds):
            order = list(modes) if r % 2 == 0 else list(reversed(modes))
            for mode in order:
                times, export = modes[mode](step, device, 1, 1, args.active, Path(tmp) / mode)
                steps[mode].extend(times)
                exports[mode].append(export)
    plain, ours = (statistics.median(steps[m]) for m in modes)
    rows = [
        (m, statistics.median(steps[m]), statistics.median(exports[m]), len(steps[m]))
        for m in modes
    ]
    setup = (
        f"{args.workload} size {args.size} {dtype_name} on {device.name} "
        f"({platform.processor() or platform.machine()}, {torch.get_num_threads()} torch "
        f"thread(s)), torch {torch.__version__}, schedule 1/1/{args.active}, "
        f"{args.rounds} alternating rounds"
    )
    lines = [
        f"Setup: {setup}.",
        "",
        "| mode | median active step | median export step | steps measured |",
        "|---|---|---|---|",
        *(f"| {m} | {s:.1f} us | {e / 1000:.1f} ms | {n} |" for m, s, e, n in rows),
        "",
        f"Step-time overhead of kinetoscope.profile: {100 * (ours - plain) / plain:+.1f}% "
        "(target: within 5%).",
    ]
    print("\n".join(lines))
    if args.record:
        record(lines, args)


def record(lines: list[str], args) -> None:
    command = (
        f"python bench/capture_overhead.py --workload {args.workload} --size {args.size} "
        f"--active {args.active} --rounds {args.rounds} --threads {args.threads} --record"
    )
    section = "\n".join(
        [
            HEADING,
            "",
            "Step time of the same workload under `kinetoscope.profile` and under plain",
            "`torch.profiler.profile` + `tensorboard_trace_handler` (same schedule and",
            "activities). Our extra work (metadata splice, table) happens once per cycle, in",
            "the exporting step, not in the recorded steps.",
            "",
            f"Command: `{command}`",
            "",
            *lines,
            "",
        ]
    )
    text = DOC.read_text(encoding="utf-8") if DOC.exists() else "# Benchmarks\n"
    start = text.find(HEADING)
    if start < 0:
        text = text.rstrip("\n") + "\n\n" + section
    else:
        end = text.find("\n## ", start + len(HEADING))
        text = text[:start] + section + (text[end + 1 :] if end >= 0 else "")
    DOC.parent.mkdir(parents=True, exist_ok=True)
    DOC.write_text(text, encoding="utf-8")
    print(f"recorded in {DOC}")


if __name__ == "__main__":
    main()
