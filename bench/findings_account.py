"""Does a report's account of the step hold together? One line per corpus trace.

For each trace: the savings `explain` promises (`impact_us`, added over all
findings) against the median step (the window for a trace without steps), the
device's busy share (union of its streams) against the idle share
`gpu-idle-breakdown` states, and the findings that describe one cause (the data
wait, the first step) more than once.

    python bench/findings_account.py            # every corpus trace
    python bench/findings_account.py --only resnet_train_ns
"""

from __future__ import annotations

import argparse
import statistics
from pathlib import Path

from kinetoscope.analysis.intervals import merge
from kinetoscope.analysis.steps import step_stats
from kinetoscope.pipeline.build import build_report
from kinetoscope.trace import load

CORPUS = Path(__file__).resolve().parents[1] / "tests" / "data" / "traces"
DATA_WAIT = {"dataloader-bound", "data-bound"}
FIRST_STEP = {"cold-start", "step-outlier"}


def corpus(only: list[str] | None) -> list[Path]:
    files = sorted(p for p in CORPUS.rglob("*") if p.is_file() and ".json" in p.name)
    return [p for p in files if only is None or any(o in p.name for o in only)]


def union_busy_share(trace) -> float | None:
    """Share of the step window (or the device's own span) in which any stream is busy."""
    work = trace.device_work.nonzero()[0]
    if not len(work):
        return None
    stats = step_stats(trace)
    lo, hi = min(s.start for s in stats), max(s.end for s in stats)
    s, e = merge(trace.ts[work], trace.end[work])
    busy = (e.clip(lo, hi) - s.clip(lo, hi)).sum()
    return float(busy / (hi - lo)) if hi > lo else None


def account(path: Path) -> dict:
    trace = load(path)
    report = build_report(trace)
    budget = statistics.median(s.end - s.start for s in step_stats(trace))
    saving = sum(f.impact_us for f in report.findings)
    ids = [f.id for f in report.findings]
    idle = next((f for f in report.findings if f.id == "gpu-idle-breakdown"), None)
    return {
        "trace": path.name.split(".")[0],
        "saving_us": saving,
        "budget_us": budget,
        "idle_share": idle.measured.get("idle_share") if idle else None,
        "busy_share": union_busy_share(trace),
        "data_wait": sorted(DATA_WAIT & set(ids)),
        "first_step": sorted(FIRST_STEP & set(ids)),
        "ids": ids,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", nargs="*")
    args = parser.parse_args()
    over = 0
    print(f"{'trace':58} {'saving/step':>12} {'budget':>10} {'x':>6}  idle  busy  repeats")
    for path in corpus(args.only):
        row = account(path)
        ratio = row["saving_us"] / row["budget_us"] if row["budget_us"] > 0 else 0.0
        over += ratio > 1.0 + 1e-9
        idle = f"{row['idle_share']:.0%}" if row["idle_share"] is not None else "-"
        busy = f"{row['busy_share']:.0%}" if row["busy_share"] is not None else "-"
        repeats = [g for g in (row["data_wait"], row["first_step"]) if len(g) > 1]
        print(
            f"{row['trace'][:58]:58} {row['saving_us']:12.1f} {row['budget_us']:10.1f} "
            f"{ratio:6.2f} {idle:>5} {busy:>5}  {' '.join('+'.join(g) for g in repeats)}"
        )
    print(f"traces whose savings exceed the step: {over}")


if __name__ == "__main__":
    main()
