"""Every HTML report the CLI writes for the corpus loads and draws in Chromium, within
a bound (issue 36): `explain --format html` of a trace of each corpus family
(tests/corpus_families.py; each trace under tests/data/traces with `pytest -m corpus`),
the diff report of compare_base vs compare_test, and the ranks report of
multirank/dlrm_8ranks.

A report whose script never returns (the timeline's skip loop once did not advance
on two corpus traces) never fires its load event: the bound turns that hang into a
failure naming the trace. One browser (tests/report/conftest.py) serves every page;
each report is written by the CLI in-process (`kinetoscope.cli.main`), so the page is
the one a user opens."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from kinetoscope.cli import main

from ..conftest import CORPUS, corpus, corpus_files
from ..corpus_families import by_family
from .conftest import BOUND_MS, open_drawn

SINGLE = [p for p in corpus_files() if "multirank" not in p.parts]


def _write(args: list[str], out: Path) -> Path:
    argv = sys.argv
    sys.argv = ["kinetoscope", *args, "--format", "html", "-o", str(out), "--force"]
    try:
        with pytest.raises(SystemExit) as done:
            main()
    finally:
        sys.argv = argv
    assert done.value.code == 0, args
    return out


def _loads_and_draws(browser, html: Path) -> None:
    page = browser.new_page(viewport={"width": 1280, "height": 900})
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    try:
        open_drawn(page, html)
        timelines = page.evaluate("() => document.querySelectorAll('.tl canvas').length")
    finally:
        page.close()
    assert errors == [], (html.name, errors)
    assert timelines >= 1, html.name


@pytest.mark.parametrize("trace", by_family(SINGLE), ids=lambda p: str(p.relative_to(CORPUS)))
def test_explain_html_of_every_corpus_trace_loads_and_draws(browser, tmp_path, trace):
    _loads_and_draws(browser, _write(["explain", str(trace)], tmp_path / "r.html"))


def test_diff_html_loads_and_draws(browser, tmp_path):
    base, test = corpus("gpu/compare_base.json.gz"), corpus("gpu/compare_test.json.gz")
    _loads_and_draws(browser, _write(["diff", str(base), str(test)], tmp_path / "d.html"))


def test_ranks_html_loads_and_draws(browser, tmp_path):
    folder = corpus("multirank/dlrm_8ranks")
    _loads_and_draws(browser, _write(["explain", str(folder)], tmp_path / "ranks.html"))


def test_axis_ticks_end_on_a_view_far_from_zero(browser, tmp_path):
    """A view 256 us wide at 1e18 us: a tick step of 50 us is below the times' precision
    (128 us), so stepping by adding stood still and the draw never returned."""
    html = _write(["explain", str(corpus("gpu/simple_add_a100.json.gz"))], tmp_path / "r.html")
    page = browser.new_page(viewport={"width": 1280, "height": 900})
    try:
        page.goto(html.as_uri(), wait_until="load", timeout=BOUND_MS)
        page.evaluate(
            """() => setTimeout(() => { const t = document.querySelector('.tl').ksTimeline;
                 t.v0 = 1e18; t.v1 = 1e18 + 256; t.draw(); window.drawnFar = true; }, 0)"""
        )
        page.wait_for_function("() => window.drawnFar === true", timeout=BOUND_MS)
    finally:
        page.close()
