"""One number per quantity (issue 19, item 6), counted over the corpus.

    python bench/one_number.py

For every corpus trace: does `summary`'s top host row and top device row print
the share the window's profiler table gives it (the base explain's hotspot and
the HTML tables use); does `check -e "not dataloader-bound"` pass where explain
lists dataloader-bound under "Not checked"; and, cut at 60% of its JSON, what
trust grade does the recovered trace get. Run it with PYTHONPATH pointing at an
older checkout's src to get the "before" column of docs/accuracy.md.
"""

from __future__ import annotations

import gzip
import sys
import tempfile
from collections import Counter
from pathlib import Path

from kinetoscope.analysis.quality import trace_quality
from kinetoscope.analysis.summary import summarize
from kinetoscope.analysis.table import window_key_averages
from kinetoscope.api import explain
from kinetoscope.compare.check import run_check
from kinetoscope.errors import TraceError
from kinetoscope.trace import load

CORPUS = Path(__file__).resolve().parents[1] / "tests" / "data" / "traces"


def _printed_differs(ranked, table, device: bool) -> bool:
    """Whether the summary's share and the window table's share print differently."""
    if not ranked:
        return False
    top = ranked[0]
    row = next((r for r in table.rows if r.is_device == device and r.name == top.name), None)
    own = (row.self_device_us if device else row.self_cpu_us) if row else 0.0
    total = table.self_device_total_us if device else table.self_cpu_total_us
    share = own / total if total else 0.0
    return f"{100 * top.share:.1f}" != f"{100 * share:.1f}"


def _cut_grade(path: Path, folder: Path) -> str:
    raw = path.read_bytes()
    if path.suffix == ".gz":
        raw = gzip.decompress(raw)
    cut = folder / "cut.json"
    cut.write_bytes(raw[: int(len(raw) * 0.6)])
    try:
        return trace_quality(load(cut)).grade
    except TraceError:  # cut before its first event: refused with one line, exit 2
        return "refused"


def main() -> None:
    paths = sorted(p for p in CORPUS.rglob("*.json*") if p.is_file())
    host = device = unchecked = passed = 0
    grades: Counter[str] = Counter()
    with tempfile.TemporaryDirectory() as tmp:
        for path in paths:
            trace = load(path)
            summary, table = summarize(trace), window_key_averages(trace)
            host += _printed_differs(summary.top_host_ops, table, device=False)
            device += _printed_differs(summary.top_kernels, table, device=True)
            if any(s.id == "dataloader-bound" for s in explain(trace).not_checked):
                unchecked += 1
                passed += run_check(trace, ["not dataloader-bound"])[0].passed
            grades[_cut_grade(path, Path(tmp))] += 1
    print(f"{len(paths)} corpus traces")
    print(f"summary's top host row prints another share than the window table: {host}")
    print(f"summary's top device row prints another share than the window table: {device}")
    print(f"'not dataloader-bound' PASSes where the rule is Not checked: {passed} of {unchecked}")
    print(f"cut at 60%, trust grades: {dict(sorted(grades.items()))}")


if __name__ == "__main__":
    sys.exit(main())
