"""Frame time of the HTML report's timeline while panning, in headless Chromium.

    PYTHONPATH=src python bench/bench_timeline_frames.py [TRACE] [--frames 120]
    PYTHONPATH=src python bench/bench_timeline_frames.py A --diff B

Writes the report for TRACE (default: the 229k-event xdit corpus trace), or with
`--diff B` the `diff A B --format html` page (one timeline per run), opens it in
/usr/bin/chromium through Playwright, and measures each timeline's own draw
time (performance.now() around Timeline.draw) over a series of pans at full view
and zoomed in. Needs `pip install playwright` and Debian's chromium.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

import kinetoscope
from kinetoscope.report.html import render_html

DEFAULT = (
    Path(__file__).resolve().parents[1]
    / "tests/data/traces/gpu/tracelens_xdit_flux.1_aiter_sage__profile_trace_rank_0.json.gz"
)
ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking",
        "--disable-component-update", "--disable-sync", "--no-first-run"]  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("trace", nargs="?", type=Path, default=DEFAULT)
    parser.add_argument("--frames", type=int, default=120)
    parser.add_argument("--diff", type=Path, default=None, help="B: time the diff page A B")
    args = parser.parse_args()
    from playwright.sync_api import sync_playwright

    traces = [args.trace] + ([args.diff] if args.diff else [])
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "report.html"
        began = time.perf_counter()
        out.write_text(_page(args.trace, args.diff), encoding="utf-8")
        size = sum(t.stat().st_size for t in traces)
        print(f"analysis + html {time.perf_counter() - began:.2f} s, "
              f"{out.stat().st_size / 1e6:.2f} MB (traces {size / 1e6:.2f} MB)")  # fmt: skip
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path="/usr/bin/chromium", args=ARGS)
            page = browser.new_page(viewport={"width": 1280, "height": 1000})
            began = time.perf_counter()
            page.goto(out.as_uri())
            page.wait_for_function(
                "() => [...document.querySelectorAll('.tl')].every(t => t.dataset.v1)"
            )
            print(f"page load to first frame {time.perf_counter() - began:.2f} s")
            for index in range(page.locator(".tl").count()):
                for label, zoom in (("full view", 1.0), ("zoomed 20x", 0.05)):
                    frames = page.evaluate(
                        """([i, n, zoom]) => {
                        const t = document.querySelectorAll('.tl')[i].ksTimeline;
                        t.home(); t.zoom(zoom); t.draw(); t.frames = [];
                        const step = (t.v1 - t.v0) / 50;
                        for (let i = 0; i < n; i++) { t.pan(i % 40 < 20 ? step : -step); t.draw(); }
                        return t.frames; }""",
                        [index, args.frames, zoom],
                    )
                    frames.sort()
                    p90 = frames[int(len(frames) * 0.9)]
                    print(f"timeline {index + 1}, {label}: {len(frames)} frames, "
                          f"median {statistics.median(frames):.2f} ms, p90 {p90:.2f} ms, "
                          f"max {frames[-1]:.2f} ms")  # fmt: skip
            browser.close()


def _page(a: Path, b: Path | None) -> str:
    """The explain page of `a`, or the diff page of `a` and `b`."""
    if b is None:
        return render_html(kinetoscope.explain(a))
    from kinetoscope.compare.diff import diff_runs
    from kinetoscope.compare.runs import load_run
    from kinetoscope.pipeline.timeline_sides import diff_sides
    from kinetoscope.report.diff_render import to_html

    runs = (load_run(a), load_run(b))
    diff = diff_runs(*runs)
    return to_html(diff, diff_sides(diff, runs))


if __name__ == "__main__":
    main()
