"""The HTML reports of hostile traces opened in headless Chromium (issues 33 and 36).

Each case takes a small corpus trace, puts markup and script payloads in its names
(event, thread, process and device names: `</script>`, `<img onerror>`, `<svg
onload>`, U+2028, bidi overrides, a 100 kB name), now and then multiplies its events
or applies one of tests/test_fuzz.py's mutations too, and writes the `explain`,
`diff` (against the undamaged trace) or multi-rank (`explain DIR` over two ranks)
report with the CLI, in-process. Every payload that runs sets `window.__pwned`.

The property: the report is written, or refused in one line (exit 2); the page loads
and every timeline finishes its first draw within the bound, each canvas painted;
no page error, no console error, no dialog; `window.__pwned` stays undefined and no
element carries an event-handler attribute (the templates have none).

One browser serves the module (tests/report/conftest.py). Default run: 3 pages.
`pytest -m fuzz tests/report/test_fuzz_html.py`: 240 pages.
"""

from __future__ import annotations

import copy
import json
import sys
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kinetoscope.cli import main
from tests.fuzz_log import log_run
from tests.test_fuzz import COMMON, MUTATIONS, SEEDS, _dump, seed_doc

from ..conftest import corpus
from .conftest import open_drawn

SETTINGS = {**COMMON, "deadline": None}
PWN = "window.__pwned=1"
PAYLOADS = [
    f"</script><script>{PWN}</script>",
    f'<img src=x onerror="{PWN}">',
    f"<svg onload={PWN}>",
    f'"><script>{PWN}</script>',
    f"'-{PWN}-'",
    f'";{PWN};"',
    "<!--<script>",
    f"</textarea><script>{PWN}</script>",
    '<iframe src="javascript:top.__pwned=1">',
    f"javascript:{PWN}",
    f"${{{PWN}}}",
    "{{constructor.constructor('window.__pwned=1')()}}",
    "\u2028\u2029",
    "\u202eevil\u2066",
    "\x1b[31m\x00\x9b",
    "&lt;b&gt;&amp;",
    "x" * 100_000,
]


def _names(doc: dict, data) -> None:
    """Payloads in event names, thread and process names (`M` events), device names."""
    events = [e for e in doc.get("traceEvents", []) if isinstance(e, dict)]
    for _ in range(data.draw(st.integers(1, 30))):
        if not events:
            break
        event = data.draw(st.sampled_from(events))
        payload = data.draw(st.sampled_from(PAYLOADS))
        if event.get("ph") == "M" and isinstance(event.get("args"), dict):
            event["args"]["name"] = payload
        else:
            event["name"] = str(event.get("name", "")) + payload
    for device in doc.get("deviceProperties") or []:
        if isinstance(device, dict):
            device["name"] = data.draw(st.sampled_from(PAYLOADS))


def _hostile_text(data, relative: str) -> bytes:
    doc = copy.deepcopy(seed_doc(relative))
    _names(doc, data)
    if data.draw(st.integers(0, 4), label="many events") == 0:
        doc["traceEvents"] = doc["traceEvents"] * data.draw(st.sampled_from([5, 20]))
    if data.draw(st.booleans(), label="also mutated"):
        out = data.draw(st.sampled_from(MUTATIONS), label="mutation")(doc, data)
        return out[1] if isinstance(out, tuple) else out if isinstance(out, bytes) else _dump(out)
    return _dump(doc)


def _write(args: list[str], out: Path) -> int:
    """The CLI's exit code for writing `out` (0 written, 2 refused in one line)."""
    argv = sys.argv
    sys.argv = ["kinetoscope", *args, "--format", "html", "-o", str(out), "--force"]
    try:
        main()
    except SystemExit as done:
        return done.code or 0
    finally:
        sys.argv = argv
    return 0


def _report(data, tmp_path: Path) -> tuple[str, int, Path]:
    kind = data.draw(st.sampled_from(["explain", "explain", "diff", "ranks"]), label="report")
    relative = data.draw(st.sampled_from(SEEDS), label="seed")
    out = tmp_path / "r.html"
    if kind == "ranks":
        folder = tmp_path / "ranks"
        folder.mkdir(exist_ok=True)
        for rank in (0, 1):
            doc = copy.deepcopy(seed_doc(relative))
            doc["distributedInfo"] = {"backend": "nccl", "rank": rank, "world_size": 2}
            _names(doc, data)
            (folder / f"rank{rank}.json").write_bytes(_dump(doc))
        return kind, _write(["explain", str(folder)], out), out
    path = tmp_path / "t.json"
    path.write_bytes(_hostile_text(data, relative))
    if kind == "diff":
        return kind, _write(["diff", str(corpus(relative)), str(path)], out), out
    return kind, _write(["explain", str(path)], out), out


#: per canvas of each timeline: pixels that differ from its top-left one
_PAINTED = """() => [...document.querySelectorAll('.tl canvas')].map(c => {
    const d = c.getContext('2d').getImageData(0, 0, c.width, c.height).data; let n = 0;
    for (let i = 0; i < d.length; i += 4)
      if (d[i] !== d[0] || d[i+1] !== d[1] || d[i+2] !== d[2]) n++;
    return n; })"""
_HANDLERS = """() => [...document.querySelectorAll('*')].flatMap(e =>
    [...e.attributes].filter(a => a.name.startsWith('on')).map(a => e.tagName + ' ' + a.name))"""


def _page(browser, html: Path) -> tuple[str, str]:
    """(outcome, detail) of opening `html`."""
    page = browser.new_page(viewport={"width": 1280, "height": 900})
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(f"pageerror: {e}"))
    page.on("console", lambda m: errors.append(f"console: {m.text}") if m.type == "error" else 0)
    page.on("dialog", lambda d: (errors.append(f"dialog: {d.message}"), d.dismiss()))
    try:
        try:
            open_drawn(page, html)
        except Exception as exc:  # noqa: BLE001 - a timeout is the finding
            return "no-draw", f"{type(exc).__name__}: {str(exc)[:300]}"
        pwned = page.evaluate("() => window.__pwned")
        handlers = page.evaluate(_HANDLERS)
        painted = page.evaluate(_PAINTED)
    finally:
        page.close()
    if pwned is not None or handlers:
        return "bad-output", f"script from the data ran: __pwned={pwned}, handlers={handlers}"
    if errors:
        return "bad-output", "; ".join(errors)[:1000]
    if not painted or min(painted) == 0:
        return "no-draw", f"painted pixels per canvas: {painted}"
    return "ok", ""


def _case(browser, data, tmp_path: Path) -> None:
    kind, code, html = _report(data, tmp_path)
    if code != 0:
        log_run("html", f"page-{kind}", "clean-error" if code == 2 else "internal-error")
        assert code == 2, (kind, code)
        return
    outcome, detail = _page(browser, html)
    log_run("html", f"page-{kind}", outcome)
    assert outcome == "ok", (kind, detail, json.dumps(str(html)))
    html.unlink()


@settings(max_examples=3, **SETTINGS)
@given(data=st.data())
def test_hostile_reports_draw_and_run_no_script(browser, data, tmp_path):
    _case(browser, data, tmp_path)


@pytest.mark.fuzz
@settings(max_examples=240, **SETTINGS)
@given(data=st.data())
def test_fuzz_html_pages_240(browser, data, tmp_path):
    _case(browser, data, tmp_path)
