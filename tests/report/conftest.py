"""The browser the HTML tests share: the system Chromium through Playwright, one per
test module. Skips with the reason where Playwright or the browser is missing, and
fails there under `CI` (tests/requires.py)."""

from __future__ import annotations

import importlib.util
import os
from pathlib import Path

import pytest

from ..requires import require

# the system Chromium; tests/test_requires.py points this elsewhere to prove a missing
# browser fails the run under CI
CHROMIUM = Path(os.environ.get("KINETOSCOPE_TEST_CHROMIUM", "/usr/bin/chromium"))
ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]


@pytest.fixture(scope="module")
def browser():
    present = importlib.util.find_spec("playwright") is not None
    require(present, "playwright is not installed", "pip install -e '.[dev]'")
    require(CHROMIUM.exists(), f"{CHROMIUM} is missing", "apt-get install -y chromium")
    from playwright import sync_api

    with sync_api.sync_playwright() as p:
        b = p.chromium.launch(executable_path=str(CHROMIUM), args=ARGS)
        yield b
        b.close()


def shot(target, path: Path, **options) -> None:
    """A screenshot of what a browser test saw (a page or a locator), for a person to look
    at: taken only with KINETOSCOPE_TEST_SCREENSHOTS=1, into the test's tmp dir. Each one
    is encoded by Chromium; they were 10 s of test_html_browser.py's 37 s of CPU, in every
    run, for pictures nobody opened. No assertion reads them."""
    if os.environ.get("KINETOSCOPE_TEST_SCREENSHOTS"):
        target.screenshot(path=str(path), **options)


#: how long a report page may take to load and draw every timeline (a draw takes
#: milliseconds; a page that never draws hangs)
BOUND_MS = 20_000


def open_drawn(page, html: Path) -> None:
    """Open `html` in `page` and wait until every timeline finished its first draw (each
    sets `data-v1` at its end); a Playwright timeout past `BOUND_MS` otherwise."""
    page.goto(html.as_uri(), wait_until="load", timeout=BOUND_MS)
    page.wait_for_function(
        "() => [...document.querySelectorAll('.tl[data-timeline]')]"
        ".every(t => t.dataset.v1 !== undefined)",
        timeout=BOUND_MS,
    )
