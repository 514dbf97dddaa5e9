"""Anonymous memory of each rule on an out-of-core trace: which analyses grow with it.

Loads FILE out of core (`out_of_core=True`), then runs every rule in catalog order
in this process, sampling RssAnon every 20 ms (`bench_max_memory.PeakStack`):
per rule, how far above its starting point RssAnon peaked and how much it kept
(the first rule to ask for a shared analysis pays for it; later rules read the
cache). Linux only (/proc).

    python bench/rules_memory.py /tmp/large/resnet_train_ns_300MB.json
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "src"))
sys.path.insert(0, str(HERE))

import kinetoscope  # noqa: E402
from bench_max_memory import PeakStack, _status_kb  # noqa: E402
from kinetoscope.pipeline.build import build_report  # noqa: E402
from kinetoscope.rules.engine import RuleContext, load_rules  # noqa: E402


def anon_mb() -> float:
    return _status_kb(os.getpid()).get("RssAnon", 0) / 1024


def main(path: str) -> None:
    trace = kinetoscope.load(path, out_of_core=True)
    print(f"after load: RssAnon {anon_mb():.0f} MB, {len(trace)} events")
    rows = []
    for rule_id, rule in load_rules().items():
        before = anon_mb()
        with PeakStack() as peak:
            try:
                rule.check(RuleContext(trace, rule, {}))
            except Exception as exc:  # noqa: BLE001 - a rule that cannot run here
                print(f"{rule_id}: not run ({exc})")
        rows.append((peak.peak_kb / 1024 - before, anon_mb() - before, rule_id))
    before = anon_mb()
    with PeakStack() as peak:
        build_report(trace)
    rows.append((peak.peak_kb / 1024 - before, anon_mb() - before, "build_report"))
    for transient, held, rule_id in sorted(rows, reverse=True)[:12]:
        print(f"{rule_id:32} peak +{transient:7.1f} MB  held +{held:7.1f} MB")
    print(f"end: RssAnon {anon_mb():.0f} MB")


if __name__ == "__main__":
    main(sys.argv[1])
