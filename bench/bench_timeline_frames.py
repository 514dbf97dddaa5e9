"""Frame time of the HTML report's timeline while panning, in headless Chromium.

    PYTHONPATH=src python bench/bench_timeline_frames.py [TRACE] [--frames 120]

Writes the report for TRACE (default: the 229k-event xdit corpus trace), opens it
in /usr/bin/chromium through Playwright, and measures the timeline's own draw
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
    Path(__file__).resolve().parents[2]
    / "shared/traces/gpu/tracelens_xdit_flux.1_aiter_sage__profile_trace_rank_0.json.gz"
)
ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking",
        "--disable-component-update", "--disable-sync", "--no-first-run"]  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("trace", nargs="?", type=Path, default=DEFAULT)
    parser.add_argument("--frames", type=int, default=120)
    args = parser.parse_args()
    from playwright.sync_api import sync_playwright

    report = kinetoscope.explain(args.trace)
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "report.html"
        began = time.perf_counter()
        out.write_text(render_html(report), encoding="utf-8")
        print(f"render_html {time.perf_counter() - began:.2f} s, {out.stat().st_size / 1e6:.2f} MB"
              f" (trace {args.trace.stat().st_size / 1e6:.2f} MB)")  # fmt: skip
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path="/usr/bin/chromium", args=ARGS)
            page = browser.new_page(viewport={"width": 1280, "height": 1000})
            began = time.perf_counter()
            page.goto(out.as_uri())
            page.wait_for_function("() => document.querySelector('.tl').dataset.v1")
            print(f"page load to first frame {time.perf_counter() - began:.2f} s")
            for label, zoom in (("full view", 1.0), ("zoomed 20x", 0.05)):
                frames = page.evaluate(
                    """([n, zoom]) => { const t = document.querySelector('.tl').ksTimeline;
                    t.setView(t.t0, t.t1); t.zoom(zoom); t.draw(); t.frames = [];
                    const step = (t.v1 - t.v0) / 50;
                    for (let i = 0; i < n; i++) { t.pan(i % 40 < 20 ? step : -step); t.draw(); }
                    return t.frames; }""",
                    [args.frames, zoom],
                )
                frames.sort()
                p90 = frames[int(len(frames) * 0.9)]
                print(f"{label}: {len(frames)} frames, median {statistics.median(frames):.2f} ms,"
                      f" p90 {p90:.2f} ms, max {frames[-1]:.2f} ms")  # fmt: skip
            browser.close()


if __name__ == "__main__":
    main()
