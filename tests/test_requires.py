"""A test that needs a tool fails under CI where the tool is missing, and skips (with the
way to get it) elsewhere: run the browser tests in a child pytest with Chromium pointed at a
path that does not exist."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def _browser_tests(tmp_path: Path, ci: str | None) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k != "CI"}
    env["KINETOSCOPE_TEST_CHROMIUM"] = str(tmp_path / "no-chromium")
    if ci is not None:
        env["CI"] = ci
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-rs", "-p", "no:randomly", "-p", "no:cacheprovider",
         "tests/report/test_html_browser.py", "-k", "timeline_times_read_as_units_fmt_us"],
        cwd=REPO, env=env, capture_output=True, text=True, timeout=300,
    )  # fmt: skip


def test_missing_chromium_fails_under_ci(tmp_path):
    done = _browser_tests(tmp_path, ci="true")
    assert done.returncode == 1, done.stdout[-2000:]
    assert "1 failed" in done.stdout or "1 error" in done.stdout, done.stdout[-2000:]
    assert "CI is set and a test tool is missing" in done.stdout
    assert "apt-get install -y chromium" in done.stdout


def test_missing_chromium_skips_with_the_way_to_get_it_elsewhere(tmp_path):
    for ci in (None, "", "0", "false"):
        done = _browser_tests(tmp_path, ci=ci)
        assert done.returncode == 0, done.stdout[-2000:]
        assert "1 skipped" in done.stdout
        assert "no-chromium is missing (apt-get install -y chromium)" in done.stdout
