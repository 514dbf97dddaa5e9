"""Time `kinetoscope explain` on corpus traces: load, each rule, and the whole command.

Two measurements per file, each in its own fresh subprocess:
- the command as a user runs it (`python -m kinetoscope explain FILE -o /dev/null`),
  wall time (interpreter start-up included) and peak RSS (the largest of the
  command children run so far: exact for the first file, an upper bound after);
- a breakdown inside one process: load, then every registered rule in turn (the
  first rule to ask for a shared analysis pays for it), then building the report.

    python bench/bench_explain.py                 # the largest corpus file
    python bench/bench_explain.py tests/data/traces/gpu/*.json.gz
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
LARGEST = (
    REPO
    / "tests"
    / "data"
    / "traces"
    / "gpu"
    / "tracelens_xdit_flux.1_aiter_sage__profile_trace_rank_0.json.gz"
)

_BREAKDOWN = """
import json, sys, time
t0 = time.perf_counter()
import kinetoscope
from kinetoscope.pipeline.build import build_report
from kinetoscope.rules.engine import RuleContext, load_rules
t1 = time.perf_counter()
trace = kinetoscope.load(sys.argv[1])
t2 = time.perf_counter()
rules = {}
for rule_id, rule in load_rules().items():
    start = time.perf_counter()
    try:
        rule.check(RuleContext(trace, rule, {}))
    except Exception:
        pass
    rules[rule_id] = time.perf_counter() - start
t3 = time.perf_counter()
build_report(trace)
t4 = time.perf_counter()
print(json.dumps({"events": len(trace), "import_s": t1 - t0, "load_s": t2 - t1,
                  "rules_s": t3 - t2, "rules": rules, "report_again_s": t4 - t3}))
"""


def run_child(args: list[str]) -> tuple[float, str]:
    """Wall seconds and stdout of one child process."""
    start = time.perf_counter()
    done = subprocess.run(args, capture_output=True, text=True)
    wall = time.perf_counter() - start
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(args)} failed: {done.stderr.strip()}")
    return wall, done.stdout


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("files", nargs="*", type=Path, default=[LARGEST])
    args = parser.parse_args()
    for path in args.files:
        wall, _ = run_child(
            [sys.executable, "-m", "kinetoscope", "explain", str(path), "-o", os.devnull]
        )
        # children so far: the commands above; the largest peak is an upper bound for this one
        rss = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
        _, out = run_child([sys.executable, "-c", _BREAKDOWN, str(path)])
        parts = json.loads(out)
        slowest = sorted(parts["rules"].items(), key=lambda kv: -kv[1])[:3]
        print(
            f"{path.name}: {parts['events']} events; explain command {wall:.2f} s wall, "
            f"peak RSS <= {rss / 1024:.0f} MB; import {parts['import_s']:.2f} s, "
            f"load {parts['load_s']:.2f} s, all rules {parts['rules_s']:.2f} s "
            f"(slowest: {', '.join(f'{k} {v:.2f} s' for k, v in slowest)}), "
            f"report with analyses cached {parts['report_again_s']:.2f} s"
        )


if __name__ == "__main__":
    main()
