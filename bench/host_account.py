"""Per corpus trace: the verdict, the sync-wait share and the CPU compute share.

The before/after table of docs/accuracy.md ("CPU verdicts and blocking copies") is this
script run on two checkouts:

    PYTHONPATH=src python bench/host_account.py [EXTRA_TRACE ...]

`--gaps` prints instead, for the calls blocking by name (synchronize calls, copies into
pageable memory), how long after the end of the device work queued before them they
returned: the wake-up delay `analysis.blocking.WAKE_US` bounds.
"""

from __future__ import annotations

import argparse
import sys
import warnings
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
CORPUS = REPO / "tests" / "data" / "traces"


def corpus_traces() -> list[Path]:
    files = sorted((CORPUS / "gpu").glob("*.json*")) + sorted((CORPUS / "cpu").glob("*.json*"))
    return files + sorted((CORPUS / "multirank" / "dlrm_8ranks").glob("worker0_*"))


def account(path: Path) -> str:
    import kinetoscope

    report = kinetoscope.explain(path)
    m = report.metrics
    return (
        f"| `{path.name}` | {report.verdict.regime} | {100 * m.get('sync_share', 0):.1f}% "
        f"| {m.get('sync_wait_us', 0):,.0f} us | {100 * m.get('compute_share', 0):.1f}% |"
    )


def end_gaps(path: Path) -> str:
    import kinetoscope
    from kinetoscope.analysis.blocking import is_pageable_dtoh, named_blocking
    from kinetoscope.trace import Cat

    trace = kinetoscope.load(path)
    work = np.flatnonzero(trace.device_work & (trace.launch_of >= 0))
    queued = trace.ts[trace.launch_of[work]]
    calls = np.flatnonzero(trace.mask(Cat.RUNTIME, Cat.DRIVER) & (trace.lane_kind == 1))
    gaps = []
    for c in calls.tolist():
        own = [trace.name(w) for w in work[trace.launch_of[work] == c].tolist()]
        if not (named_blocking(trace.name(c)) or any(is_pageable_dtoh(n) for n in own)):
            continue
        before = work[queued < trace.ts[c]]
        if not len(before):
            continue
        last = float(trace.end[before].max())
        if trace.ts[c] < last <= trace.end[c] + 1.0:  # the device still worked when it began
            gaps.append(float(trace.end[c]) - last)
    if not gaps:
        return f"{path.name}: no blocking call overlapping queued work"
    median, worst = np.median(gaps), max(gaps)
    return f"{path.name}: {len(gaps)} calls, end gap median {median:.1f} max {worst:.1f} us"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("traces", nargs="*", type=Path, help="extra traces (after the corpus)")
    parser.add_argument("--gaps", action="store_true", help="blocking calls' end gaps instead")
    args = parser.parse_args()
    warnings.filterwarnings("ignore")
    if not args.gaps:
        print("| trace | verdict | sync wait | sync wait (per step median) | CPU compute |")
        print("|---|---|---|---|---|")
    for path in corpus_traces() + args.traces:
        print(end_gaps(path) if args.gaps else account(path))
    return 0


if __name__ == "__main__":
    sys.exit(main())
