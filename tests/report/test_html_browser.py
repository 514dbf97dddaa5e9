"""The HTML report in a real browser (headless Chromium through Playwright).

Skips with the reason where Playwright or /usr/bin/chromium is missing, and fails
there under `CI` (tests/requires.py); `.ci/run` installs both.
Screenshots go to the test's tmp dir with KINETOSCOPE_TEST_SCREENSHOTS=1 (look at them).
"""

from __future__ import annotations

import functools
import re
from pathlib import Path

import pytest

import kinetoscope
from kinetoscope.report.html import render_html

from ..conftest import corpus
from .conftest import shot

SMALL = "gpu/tracelens_h100__gaunernst_bert-small-uncased__1016001.json.gz"
RESNET = "gpu/resnet50_dataloader_workers0.pt.trace.json.gz"
XDIT = "gpu/tracelens_xdit_flux.1_aiter_sage__profile_trace_rank_0.json.gz"


def _open(browser, html_path: Path, scheme: str = "light"):
    page = browser.new_page(viewport={"width": 1280, "height": 1000}, color_scheme=scheme)
    errors: list[str] = []
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.goto(html_path.as_uri())
    page.wait_for_function("() => (document.querySelector('.tl') || {dataset: {}}).dataset.v1")
    return page, errors


def _view(page) -> tuple[float, float]:
    data = page.evaluate("() => Object.assign({}, document.querySelector('.tl').dataset)")
    return float(data["v0"]), float(data["v1"])


def _painted_pixels(page) -> int:
    """Canvas pixels that differ from the top-left corner (the background)."""
    return page.evaluate(
        """() => { const c = document.querySelector('.tl canvas');
        const d = c.getContext('2d').getImageData(0, 0, c.width, c.height).data;
        let n = 0; for (let i = 0; i < d.length; i += 4)
          if (d[i] !== d[0] || d[i+1] !== d[1] || d[i+2] !== d[2]) n++;
        return n; }"""
    )


@functools.cache
def _explained(relative: str) -> tuple[str, kinetoscope.Report]:
    """One explain and one page per corpus trace for the module: its tests only read the
    report, and explaining a trace cost more CPU than showing its page in Chromium."""
    report = kinetoscope.explain(corpus(relative))
    return render_html(report), report


def _report(tmp_path: Path, relative: str) -> tuple[Path, kinetoscope.Report]:
    html, report = _explained(relative)
    out = tmp_path / (Path(relative).name.split(".json")[0] + ".html")
    out.write_text(html, encoding="utf-8")
    return out, report


@pytest.mark.parametrize("relative", [SMALL, RESNET, XDIT], ids=["bert", "resnet50", "xdit"])
def test_report_draws_zooms_and_highlights(browser, tmp_path, relative):
    html_path, report = _report(tmp_path, relative)
    if relative != SMALL:  # a 70 KB trace cannot pay for the page's fixed 40 KB of CSS/JS
        trace_size = corpus(relative).stat().st_size  # these corpus files are gzipped
        assert html_path.stat().st_size < 1.5 * trace_size
    page, errors = _open(browser, html_path)
    shot(page, tmp_path / "light.png")
    assert errors == []
    assert _painted_pixels(page) > 10_000
    v0, v1 = _view(page)
    box = page.locator(".tl canvas").bounding_box()
    page.mouse.move(box["x"] + box["width"] * 0.6, box["y"] + 120)
    page.mouse.wheel(0, -600)  # zoom in around the cursor
    page.wait_for_timeout(100)
    z0, z1 = _view(page)
    assert z1 - z0 < 0.7 * (v1 - v0) and v0 <= z0 < z1 <= v1
    page.keyboard.press("d")  # pan right by a tenth of the view
    page.wait_for_timeout(100)
    p0, p1 = _view(page)
    assert p0 > z0 and abs((p1 - p0) - (z1 - z0)) < 1e-6 * (z1 - z0) + 1e-3
    # a finding whose evidence names events: clicking it outlines them and moves the view there
    with_events = page.evaluate(
        """() => JSON.parse(document.querySelector('.tl script').textContent).findings
              .map((f, i) => f.events.length ? i : -1).filter(i => i >= 0)"""
    )
    assert with_events, "no finding located its evidence on an event"
    index = with_events[0]
    page.locator(f'.finding[data-finding="{index}"]').click()
    page.wait_for_timeout(200)
    data = page.evaluate("() => Object.assign({}, document.querySelector('.tl').dataset)")
    assert int(data["highlighted"]) >= 1
    assert (
        page.locator(f'.finding[data-finding="{index}"]')
        .get_attribute("class")
        .endswith("selected")
    )
    shot(page.locator(".tl"), tmp_path / "finding.png")
    assert errors == []
    page.close()


def _luminance(rgb: str) -> float:
    channels = [int(x) / 255 for x in re.findall(r"\d+", rgb)[:3]]
    lin = [c / 12.92 if c <= 0.03928 else ((c + 0.055) / 1.055) ** 2.4 for c in channels]
    return 0.2126 * lin[0] + 0.7152 * lin[1] + 0.0722 * lin[2]


#: (text, colour, background) of an element: the background is the first ancestor's that
#: is not transparent (what the text is actually drawn on)
_TEXT_COLOURS = """e => {
    let bg = 'rgba(0, 0, 0, 0)', n = e;
    while (n && /rgba\\(0, 0, 0, 0\\)|transparent/.test(bg)) {
      bg = getComputedStyle(n).backgroundColor; n = n.parentElement; }
    return [e.innerText.slice(0, 30), getComputedStyle(e).color, bg]; }"""


def _assert_readable(colours, label: str) -> None:
    """WCAG AA: every (text, colour, background) at a contrast of 4.5:1 or more."""
    for text, fg, bg in colours:
        a, b = sorted([_luminance(fg), _luminance(bg)])
        assert (b + 0.05) / (a + 0.05) >= 4.5, (label, text, fg, bg)


@pytest.mark.parametrize("scheme", ["light", "dark"])
def test_text_contrast_in_both_themes(browser, tmp_path, scheme):
    html_path, _ = _report(tmp_path, SMALL)
    page, errors = _open(browser, html_path, scheme)
    shot(page, tmp_path / f"{scheme}.png", full_page=True)
    pairs = page.evaluate(
        "() => [...document.querySelectorAll('.ks p, .ks td, .ks h2, .ks code, .ks li')]"
        ".slice(0, 200).map(" + _TEXT_COLOURS + ")"
    )
    assert pairs and errors == []
    _assert_readable(pairs, scheme)
    dark_bg = _luminance(pairs[0][2]) < 0.2
    assert dark_bg == (scheme == "dark")
    page.close()


COMM = "gpu/sampled_rank0.json.gz"  # NCCL kernels on two streams beside the compute stream


@pytest.mark.parametrize("scheme", ["light", "dark"])
def test_verdict_quality_kernel_types_and_streams_are_shown_and_readable(browser, tmp_path, scheme):
    html_path, report = _report(tmp_path, COMM)
    page, errors = _open(browser, html_path, scheme)
    sections = ["verdict", "quality", "kernel_types", "streams"]
    for name in sections:
        block = page.locator(f'[data-section="{name}"]')
        assert block.count() == 1 and block.is_visible(), name
        block.scroll_into_view_if_needed()
        shot(block, tmp_path / f"{name}-{scheme}.png")
    # the window account's bar: one coloured part per class holding time, widths in
    # proportion, adding up to the whole bar (the shares add up to 1)
    parts = page.evaluate(
        """() => [...document.querySelectorAll('.split .part')].map(e =>
             [e.className, e.getBoundingClientRect().width, getComputedStyle(e).backgroundColor])"""
    )
    bar = page.locator(".split").bounding_box()["width"]
    shown = {k: v for k, v in report.verdict.account.items() if v > 0}
    assert len(parts) == len(shown)
    assert sum(w for _, w, _ in parts) == pytest.approx(bar, abs=2)
    assert len({colour for _, _, colour in parts}) == len(parts)  # told apart by colour
    legend = page.locator(".split-legend li").all_inner_texts()
    words = report.decomposition_words
    assert legend[0].startswith(words["device"] + " ")
    assert len(legend) == len(shown)
    # the critical path's band: its pieces tile the window
    band = page.locator(".path-band").bounding_box()["width"]
    pieces = page.evaluate(
        """() => [...document.querySelectorAll('.path-band .part')]
             .map(e => e.getBoundingClientRect().width)"""
    )
    assert len(pieces) > 0 and sum(pieces) == pytest.approx(band, rel=0.05)
    grade = page.locator(".quality .grade").inner_text()
    assert grade.lower() == report.quality["grade"]
    rows = page.locator('[data-section="kernel_types"] tbody tr').count()
    assert rows == len(report.kernel_types["types"])
    assert "hidden under compute" in page.locator('[data-section="streams"] .comm').inner_text()
    # every piece of text in these sections against its background: WCAG AA (4.5:1)
    pairs = page.evaluate(
        """(names) => names.flatMap(n => [...document.querySelectorAll(
             `[data-section="${n}"] :is(p, li, td, th, span, strong, code)`)])
           .filter(e => e.innerText && e.innerText.trim() && !e.classList.contains('part'))
           .map("""
        + _TEXT_COLOURS
        + ")",
        sections,
    )
    assert len(pairs) > 40 and errors == []
    _assert_readable(pairs, scheme)
    page.close()


def test_timeline_times_read_as_units_fmt_us(browser, tmp_path):
    """The timeline's visible-range label, at full view and zoomed deep in, is the text
    kinetoscope.formatting.units.fmt_us gives for the same numbers (3 significant digits)."""
    from kinetoscope.formatting.units import fmt_us

    html_path, _ = _report(tmp_path, RESNET)
    page, errors = _open(browser, html_path)
    box = page.locator(".tl canvas").bounding_box()
    page.mouse.move(box["x"] + box["width"] * 0.5, box["y"] + 120)
    spans = []
    for _ in range(12):  # from the full view (seconds) down to a span under a microsecond
        v0, v1 = _view(page)
        spans.append(v1 - v0)
        label = page.locator(".tl-range").inner_text()
        assert label == f"+{fmt_us(v0)} \u2013 +{fmt_us(v1)} ({fmt_us(v1 - v0)})"
        page.mouse.wheel(0, -1500)
        page.wait_for_timeout(80)
    assert spans[0] > 1e6 and min(spans) < 1.0  # `0.350 us`, where 2 decimals would cut
    assert errors == []
    page.close()


# ---- the diff page: both runs' timelines on the shared template and script ----------
WORKERS0 = "gpu/resnet50_dataloader_workers0.pt.trace.json.gz"
WORKERS4 = "gpu/resnet50_dataloader_workers4.pt.trace.json.gz"


@pytest.fixture(scope="module")
def diff_page(tmp_path_factory):
    """`diff --format html` of the DataLoader pair (num_workers 0 -> 4): one file."""
    from kinetoscope.compare.diff import diff_runs
    from kinetoscope.compare.runs import load_run
    from kinetoscope.pipeline.timeline_sides import diff_sides
    from kinetoscope.report.diff_render import to_html

    a, b = corpus(WORKERS0), corpus(WORKERS4)
    runs = (load_run(a), load_run(b))
    out = tmp_path_factory.mktemp("diff") / "diff.html"
    diff = diff_runs(*runs)
    out.write_text(to_html(diff, diff_sides(diff, runs)), encoding="utf-8")
    return out, runs, a.stat().st_size + b.stat().st_size


def _diff_views(page) -> dict[str, dict]:
    return page.evaluate(
        """() => Object.fromEntries([...document.querySelectorAll('.tl')].map(t =>
             [t.dataset.timeline, {v0: +t.dataset.v0, v1: +t.dataset.v1,
              own: t.ksTimeline.t1 - t.ksTimeline.t0, marks: +t.dataset.marks,
              highlighted: +t.dataset.highlighted}]))"""
    )


def _painted_pixels_of(page, key: str) -> int:
    return page.evaluate(
        """(key) => { const c = document.querySelector(`.tl[data-timeline="${key}"] canvas`);
        const d = c.getContext('2d').getImageData(0, 0, c.width, c.height).data;
        let n = 0; for (let i = 0; i < d.length; i += 4)
          if (d[i] !== d[0] || d[i+1] !== d[1] || d[i+2] !== d[2]) n++;
        return n; }""",
        key,
    )


def test_diff_page_draws_both_runs_at_one_scale(browser, diff_page, tmp_path):
    html_path, runs, traces_size = diff_page
    # the bound, for the two traces together (both corpus files are gzipped)
    assert html_path.stat().st_size < 1.5 * traces_size
    page, errors = _open(browser, html_path)
    page.wait_for_function("() => document.querySelectorAll('.tl[data-v1]').length === 2")
    page.locator('.tl[data-timeline="a"]').scroll_into_view_if_needed()
    shot(page, tmp_path / "diff-light.png")
    assert errors == []
    views = _diff_views(page)
    assert list(views) == ["a", "b"]
    for key in "ab":
        assert _painted_pixels_of(page, key) > 10_000, key
    # one time scale: both open at the longer run's span (A: workers0, about 1.07 s of
    # events; B: about 0.85 s), so B's view reaches past its own last event
    spans = {k: v["v1"] - v["v0"] for k, v in views.items()}
    assert spans["a"] == pytest.approx(spans["b"], rel=1e-9)
    assert spans["a"] == pytest.approx(max(v["own"] for v in views.values()), rel=1e-9)
    assert views["b"]["own"] < 0.9 * spans["b"]
    # each run's own finding markers: every finding of each run has a card of its key
    for key, run in zip("ab", runs, strict=True):
        cards = page.locator(f'.finding[data-for="{key}"]').count()
        assert cards == len(run.findings) and views[key]["marks"] > 0
    # at one scale a zoom on A shows B the same time from B's start
    box = page.locator('.tl[data-timeline="a"] canvas').bounding_box()
    page.mouse.move(box["x"] + box["width"] * 0.6, box["y"] + 120)
    page.mouse.wheel(0, -600)
    page.wait_for_timeout(100)
    zoomed = _diff_views(page)
    assert zoomed["a"]["v1"] - zoomed["a"]["v0"] < 0.7 * spans["a"]
    assert _from_start(page, "b") == pytest.approx(_from_start(page, "a"), rel=1e-9, abs=1e-6)
    page.keyboard.press("d")  # W/A/S/D go to the canvas under the pointer
    page.wait_for_timeout(100)
    assert _diff_views(page)["a"]["v0"] > zoomed["a"]["v0"]
    assert _from_start(page, "b") == pytest.approx(_from_start(page, "a"), rel=1e-9, abs=1e-6)
    # each on its own scale, each moves alone
    page.locator("input.tl-scale").uncheck()
    page.wait_for_timeout(100)
    before = _diff_views(page)
    page.mouse.move(box["x"] + box["width"] * 0.6, box["y"] + 120)
    page.mouse.wheel(0, -600)
    page.wait_for_timeout(100)
    after = _diff_views(page)
    assert after["a"]["v1"] - after["a"]["v0"] < 0.7 * (before["a"]["v1"] - before["a"]["v0"])
    assert (after["b"]["v0"], after["b"]["v1"]) == (before["b"]["v0"], before["b"]["v1"])
    assert errors == []
    page.close()


def _from_start(page, key: str) -> tuple[float, float]:
    """The view of timeline `key` as times from its run's first event."""
    return tuple(
        page.evaluate(
            """(key) => {
               const tl = document.querySelector(`.tl[data-timeline="${key}"]`).ksTimeline;
               return [tl.v0 - tl.t0, tl.v1 - tl.t0]; }""",
            key,
        )
    )


def test_diff_scale_switch(browser, diff_page, tmp_path):
    """The DataLoader pair spans 1.07 s and 0.85 s: one scale by default, the switch gives
    each its own span and back. The CPU-only rank trace (about 1.28 s) against the MI210
    device-only one (a few ms) would make B a sliver: each opens on its own span."""
    from kinetoscope.compare.diff import diff_runs
    from kinetoscope.compare.runs import load_run
    from kinetoscope.pipeline.timeline_sides import diff_sides
    from kinetoscope.report.diff_render import to_html

    html_path, _, _ = diff_page
    page, errors = _open(browser, html_path)
    page.wait_for_function("() => document.querySelectorAll('.tl[data-v1]').length === 2")
    switch = page.locator("input.tl-scale")
    assert switch.is_checked()
    switch.uncheck()
    page.wait_for_timeout(100)
    views = _diff_views(page)
    for key in "ab":
        assert views[key]["v1"] - views[key]["v0"] == pytest.approx(views[key]["own"], rel=1e-9)
    switch.check()
    page.wait_for_timeout(100)
    views = _diff_views(page)
    assert views["b"]["v1"] - views["b"]["v0"] == pytest.approx(views["a"]["own"], rel=1e-9)
    page.close()

    runs = (
        load_run(corpus("cpu/cpu_only_rank34.pt.trace.json.gz")),
        load_run(corpus("gpu/tracelens_mi210__gpu_only_trace.json.gz")),
    )
    apart = tmp_path / "apart.html"
    diff = diff_runs(*runs)
    apart.write_text(to_html(diff, diff_sides(diff, runs)), encoding="utf-8")
    page, more_errors = _open(browser, apart)
    page.wait_for_function("() => document.querySelectorAll('.tl[data-v1]').length === 2")
    views = _diff_views(page)
    assert views["a"]["own"] > 4 * views["b"]["own"]
    assert not page.locator("input.tl-scale").is_checked()
    for key in "ab":
        assert views[key]["v1"] - views[key]["v0"] == pytest.approx(views[key]["own"], rel=1e-9)
        assert _painted_pixels_of(page, key) > 2_000, key
    shot(page.locator(".side").last, tmp_path / "apart-b.png")
    assert errors == [] and more_errors == []
    page.close()


def test_diff_page_marker_opens_its_own_runs_finding(browser, diff_page, tmp_path):
    """Clicking one of B's markers selects B's finding (unfolding B's list) and outlines
    its events on B's timeline; A's timeline and cards are untouched."""
    html_path, runs, _ = diff_page
    page, errors = _open(browser, html_path)
    page.wait_for_function("() => document.querySelectorAll('.tl[data-v1]').length === 2")
    tl = page.locator('.tl[data-timeline="b"]')
    tl.scroll_into_view_if_needed()
    # a marker of a finding that names events (drawn at the marker's x, level y)
    target = page.evaluate(
        """() => { const t = document.querySelector('.tl[data-timeline="b"]').ksTimeline;
             const p = t.placed.find(p => t.data.findings[p.m.f].events.length);
             return {x: p.x, y: t.marksTop + p.lvl * 10 + 4, f: p.m.f}; }"""
    )
    box = tl.locator("canvas").bounding_box()
    page.mouse.click(box["x"] + target["x"], box["y"] + target["y"])
    page.wait_for_timeout(200)
    card = page.locator(f'.finding[data-for="b"][data-finding="{target["f"]}"]')
    assert "selected" in card.get_attribute("class").split() and card.is_visible()
    assert page.locator('.finding[data-for="a"].selected').count() == 0
    views = _diff_views(page)
    assert views["b"]["highlighted"] >= 1 and views["a"]["highlighted"] == 0
    shot(tl, tmp_path / "diff-b-finding.png")
    assert errors == []
    page.close()


@pytest.mark.parametrize("scheme", ["light", "dark"])
def test_diff_page_text_contrast(browser, diff_page, tmp_path, scheme):
    html_path, _, _ = diff_page
    page, errors = _open(browser, html_path, scheme)
    page.evaluate("() => document.querySelectorAll('details').forEach(d => d.open = true)")
    shot(page, tmp_path / f"diff-{scheme}.png", full_page=True)
    pairs = page.evaluate(
        """() => [...document.querySelectorAll(
             '.ks :is(p, td, th, h1, h2, code, li, summary, strong, .tl-bar span)')]
           .filter(e => e.innerText && e.innerText.trim())
           .map("""
        + _TEXT_COLOURS
        + ")"
    )
    assert len(pairs) > 200 and errors == []
    _assert_readable(pairs, scheme)
    assert (_luminance(pairs[0][2]) < 0.2) == (scheme == "dark")
    page.close()


# ---- the multi-rank page: the same stylesheet, two ranks' timelines ----------------
@pytest.fixture(scope="module")
def ranks_page(tmp_path_factory):
    from kinetoscope.ranks.multirank import explain_ranks

    folder = corpus("multirank/dlrm_8ranks")
    out = tmp_path_factory.mktemp("ranks") / "ranks.html"
    out.write_text(explain_ranks([folder], jobs=1, config={}, fmt="html"), encoding="utf-8")
    return out


@pytest.mark.parametrize("scheme", ["light", "dark"])
def test_ranks_page_draws_and_reads(browser, ranks_page, tmp_path, scheme):
    page, errors = _open(browser, ranks_page, scheme)
    page.wait_for_function("() => document.querySelectorAll('.tl[data-v1]').length === 2")
    shot(page, tmp_path / f"ranks-{scheme}.png", full_page=True)
    views = _diff_views(page)
    assert list(views) == ["r7", "r1"] and errors == []
    for key in views:
        assert _painted_pixels_of(page, key) > 10_000, key
    # every lane name fits the gutter (150 px): "thread 59818 (python3)" does not whole, so it
    # is cut with an ellipsis; the gutter's last 6 px columns stay background on name rows
    inked = page.evaluate(
        """() => [...document.querySelectorAll('.tl')].map(t => {
             const tl = t.ksTimeline, dpr = tl.dpr, ctx = tl.canvas.getContext('2d');
             const bg = ctx.getImageData(1, Math.round(tl.lanesY[0][1] * dpr), 1, 1).data;
             let n = 0;
             tl.lanesY.forEach(p => {
               const d = ctx.getImageData(Math.round(144 * dpr), Math.round(p[1] * dpr),
                                          Math.round(6 * dpr), Math.round(10 * dpr)).data;
               for (let i = 0; i < d.length; i += 4)
                 if (d[i] !== bg[0] || d[i+1] !== bg[1] || d[i+2] !== bg[2]) n++; });
             return n; })"""
    )
    assert inked == [0, 0]
    page.mouse.move(0, 0)
    pairs = page.evaluate(
        """() => [...document.querySelectorAll('.ks :is(p, td, th, h1, h2, code, li, summary)')]
           .filter(e => e.innerText && e.innerText.trim())
           .map("""
        + _TEXT_COLOURS
        + ")"
    )
    assert len(pairs) > 80
    _assert_readable(pairs, scheme)
    page.close()


def test_hover_shows_args_and_the_launch_kernel_link_and_keys_zoom(browser, tmp_path):
    """BERT-small on an H100: its kernels carry grid/block/registers and link back to the
    cudaLaunchKernel that issued them (correlation id); its ops carry recorded input shapes.
    Hovering a kernel names its launch and outlines both; hovering an op lists its shapes
    on one line; W and S zoom around the pointer by 0.8x and 1.25x."""
    html_path, _ = _report(tmp_path, SMALL)
    page, errors = _open(browser, html_path)
    canvas = page.locator(".tl canvas")
    canvas.scroll_into_view_if_needed()
    box = canvas.bounding_box()

    def hover(kind: str) -> str:
        """Zoom onto the first event of `kind` ("kernel": has a grid and a launch; "shapes":
        has input shapes), put the pointer on it and return the tip's text."""
        x, y = page.evaluate(
            """(kind) => { const tl = document.querySelector('.tl').ksTimeline;
                 const k = Object.keys(tl.args).map(Number).find(k => kind === 'kernel'
                   ? 'grid' in tl.args[k] && tl.link[k] >= 0 : 'input shapes' in tl.args[k]);
                 const d = tl.end[k] - tl.start[k];
                 tl.setView(tl.start[k] - 2 * d - 1, tl.end[k] + 2 * d + 1); tl.draw();
                 const r = tl.eventRect(k); return [r[0] + r[2] / 2, r[1] + r[3] / 2]; }""",
            kind,
        )
        page.mouse.move(box["x"] + x, box["y"] + y)
        page.wait_for_timeout(100)
        return page.locator(".tl-tip").inner_text()

    tip = hover("kernel")
    for field in ("grid", "block", "registers per thread", "launched by\tcudaLaunchKernel"):
        assert field in tip, (field, tip)
    assert page.evaluate("() => +document.querySelector('.tl').dataset.highlighted") == 2
    shot(page.locator(".tl"), tmp_path / "hover-kernel.png")
    tip = hover("shapes")
    shapes = tip.split("input shapes\t")[1].splitlines()[0]
    assert shapes.startswith("[") and " " not in shapes, tip
    shot(page.locator(".tl"), tmp_path / "hover-op.png")
    v0, v1 = _view(page)
    page.keyboard.press("w")
    page.wait_for_timeout(100)
    w0, w1 = _view(page)
    assert w1 - w0 == pytest.approx(0.8 * (v1 - v0), rel=1e-6)
    page.keyboard.press("s")
    page.keyboard.press("s")
    page.wait_for_timeout(100)
    s0, s1 = _view(page)
    assert s1 - s0 == pytest.approx(1.25 * (v1 - v0), rel=1e-6)
    page.keyboard.press("a")
    page.wait_for_timeout(100)
    assert _view(page)[0] < s0
    assert errors == []
    page.close()


@pytest.mark.parametrize(
    ("os_scheme", "jupyter_light", "dark"),
    [("light", "false", True), ("dark", "true", False)],
    ids=["jupyter-dark-on-light-os", "jupyter-light-on-dark-os"],
)
def test_notebook_fragment_follows_jupyters_theme(
    browser, tmp_path, os_scheme, jupyter_light, dark
):
    """In JupyterLab the report is a fragment (`_repr_html_`) inside the notebook's page,
    which says its theme on body[data-jp-theme-light]; the notebook's theme wins over the
    system's, so the report never shows dark text on Jupyter's dark background or the
    reverse."""
    _, report = _explained(SMALL)
    host_bg = "#111111" if dark else "#ffffff"
    host = tmp_path / "notebook.html"
    host.write_text(
        f'<!DOCTYPE html><html><body data-jp-theme-light="{jupyter_light}" '
        f'style="background:{host_bg}"><div class="jp-OutputArea-output">'
        f"{report._repr_html_()}</div></body></html>",
        encoding="utf-8",
    )
    page, errors = _open(browser, host, os_scheme)
    shot(page, tmp_path / "notebook.png")
    background = page.evaluate(
        "() => getComputedStyle(document.querySelector('.ks')).backgroundColor"
    )
    assert (_luminance(background) < 0.2) == dark
    pairs = page.evaluate(
        "() => [...document.querySelectorAll('.ks :is(p, td, h2, code, li)')].slice(0, 200)"
        ".map(" + _TEXT_COLOURS + ")"
    )
    assert pairs and errors == []
    _assert_readable(pairs, os_scheme)
    page.close()


def test_finding_markers_never_hide_each_other(browser, tmp_path):
    """ResNet-50 with num_workers=0: the critical dataloader-bound finding (data-bound folded
    into it: one wait) points at the same DataLoader waits as several warn and info
    findings, so their markers crowd the same spots at full view. Placed markers on one
    level stay a marker's width apart; every critical marker is placed, never folded into
    a "+n"; the placed ones and the counts add up to every marker in view; a selected
    finding's markers are all placed."""
    html_path, report = _report(tmp_path, RESNET)
    assert sum(f.severity == "critical" for f in report.findings) >= 1
    page, errors = _open(browser, html_path)
    check = """(selected) => { const tl = document.querySelector('.tl').ksTimeline;
         if (selected !== null) { tl.finding = selected; tl.draw(); }
         const inView = tl.marks.filter(m => { const x = tl.x(m.t);
           return x >= 150 - 5 && x <= tl.width + 5; });
         const placed = tl.placed, overlaps = [];
         placed.forEach((p, i) => placed.slice(i + 1).forEach(q => {
           if (p.lvl === q.lvl && Math.abs(p.x - q.x) < 10) overlaps.push([p.x, q.x]); }));
         const counted = placed.reduce((n, p) => n + 1 + p.more, 0);
         const crit = inView.filter(m => m.sev === 'critical').length;
         const critPlaced = placed.filter(p => p.m.sev === 'critical').length;
         const sel = inView.filter(m => m.f === selected).length;
         const selPlaced = placed.filter(p => p.m.f === selected).length;
         return {overlaps, counted, total: inView.length, crit, critPlaced, sel, selPlaced,
                 folded: placed.some(p => p.more > 0)}; }"""
    full = page.evaluate(check, None)
    assert full["folded"], "the case this test is about: more markers than the levels hold"
    assert full["overlaps"] == [] and full["counted"] == full["total"]
    assert full["crit"] >= 2 and full["critPlaced"] == full["crit"]
    # an info finding selected: its markers come first, so they are all shown too
    info = next(
        i
        for i, f in enumerate(report.findings)
        if f.severity == "info" and sum(e.ts_us is not None for e in f.evidence) >= 2
    )
    chosen = page.evaluate(check, info)
    assert chosen["sel"] >= 1 and chosen["selPlaced"] == chosen["sel"]
    assert chosen["overlaps"] == [] and chosen["counted"] == chosen["total"]
    shot(page.locator(".tl"), tmp_path / "markers.png")
    assert errors == []
    page.close()
