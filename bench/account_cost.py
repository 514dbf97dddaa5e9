"""What the window account and the critical path cost, against the whole of `explain`.

For each trace: load it, compute the analyses `explain` needs whether or not the account
exists (the call tree, launch links, blocking calls, compile events, DataLoader ranges,
the math ops of a CPU run), then time `window_account` + `critical_path` (their own
cost); then `build_report` on another fresh Trace (everything `explain` computes after
the load, the account and the path included). The median of `--repeat` runs of each;
the share is account / explain. Issue 31 asks for under 10%.

    PYTHONPATH=src python bench/account_cost.py                 # the corpus
    PYTHONPATH=src python bench/account_cost.py /tmp/large/*.json --repeat 1
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

CORPUS = Path(__file__).resolve().parent.parent / "tests" / "data" / "traces"


def _timed(fn) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def measure(path: Path, repeat: int) -> tuple[float, float, float]:
    from kinetoscope.analysis.account.account import window_account
    from kinetoscope.analysis.account.path import critical_path
    from kinetoscope.analysis.blocking import blocking_calls
    from kinetoscope.analysis.compile import compile_events
    from kinetoscope.analysis.cpu_compute import compute_intervals
    from kinetoscope.analysis.dataloader import next_events
    from kinetoscope.analysis.steps import step_stats
    from kinetoscope.pipeline.build import build_report
    from kinetoscope.trace import load

    account, explain = [], []
    for _ in range(repeat):
        trace = load(str(path))
        for shared in (blocking_calls, compile_events, next_events, compute_intervals, step_stats):
            shared(trace)
        account.append(_timed(lambda t=trace: (window_account(t), critical_path(t))))
        trace = load(str(path))
        explain.append(_timed(lambda t=trace: build_report(t)))
    a, e = statistics.median(account), statistics.median(explain)
    return a, e, a / e if e > 0 else 0.0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("traces", nargs="*", type=Path)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args(argv)
    paths = args.traces or sorted(p for p in CORPUS.rglob("*.json*") if p.is_file())
    shares = []
    print(f"{'trace':48} {'account+path':>12} {'explain':>9} {'share':>6}")
    for path in paths:
        a, e, share = measure(path, args.repeat)
        shares.append(share)
        print(f"{path.name[:48]:48} {a * 1e3:10.1f}ms {e * 1e3:7.0f}ms {share:6.1%}")
    print(f"median share {statistics.median(shares):.1%}, max {max(shares):.1%}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
