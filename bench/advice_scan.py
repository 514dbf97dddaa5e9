"""Which advice each fitted rule gives on a set of traces (docs/accuracy.md, issue 32 item 5).

Usage: PYTHONPATH=src python bench/advice_scan.py "tests/data/traces/gpu/*"

One line per trace with a finding: `mem:` checkpointing or forward-only advice
(`memory-peak`), `comm:` gradient-bucket or forward advice (`exposed-communication`),
`attn:` CPU or GPU wording (`attention-backend`), `sync:` whether a device-to-pageable
copy is named (`host-sync`), `kv:` DynamicCache or a concatenating cache
(`llm-kv-cache-concat`).
"""

from __future__ import annotations

import glob
import sys

import kinetoscope
from kinetoscope.rules.engine import run_rules

RULES = ["memory-peak", "exposed-communication", "attention-backend", "host-sync"]
RULES.append("llm-kv-cache-concat")
SAID = {
    "memory-peak": ("mem", "checkpointing", "checkpointing", "fwd"),
    "exposed-communication": ("comm", "bucket_cap_mb", "buckets", "fwd"),
    "attention-backend": ("attn", "CPU", "CPU", "GPU"),
    "host-sync": ("sync", "device-to-pageable", "pageable", "-"),
    "llm-kv-cache-concat": ("kv", "DynamicCache", "DynamicCache", "cat"),
}


def main(pattern: str) -> None:
    for path in sorted(glob.glob(pattern)):
        out = []
        for f in run_rules(kinetoscope.load(path), only=RULES).findings:
            key, needle, yes, no = SAID[f.id]
            text = f.explanation + f.suggestion + " ".join(e.text for e in f.evidence)
            out.append(f"{key}:{yes if needle in text else no}")
        if out:
            print(path.rsplit("/", 1)[-1][:45], " ".join(out))


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "tests/data/traces/gpu/*")
