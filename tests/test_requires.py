"""A test that needs a tool fails under CI where the tool is missing, and skips (with the
way to get it) elsewhere: run the browser tests in a child pytest with Chromium pointed at a
path that does not exist.

One child runs pytest once per value of `CI` (`pytest.main` in a loop; `CI` is read when
the test asks for its tool, `tests/requires.py`): a child pytest costs about 2 s of CPU
to start (the interpreter, pytest's plugins, kinetoscope's report modules), and a child
per value took five of them. The path to Chromium is read at the import of
tests/report/conftest.py, the same for every value."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]

#: `CI` values, UNSET for none; each one's pytest run ends with a line `@@ CI=<value> exit=N`
UNSET = "<unset>"
DRIVER = r"""
import os, sys
import pytest

for ci in sys.argv[1:]:
    if ci == "<unset>":
        os.environ.pop("CI", None)
    else:
        os.environ["CI"] = ci
    code = pytest.main(
        ["-q", "-rs", "-p", "no:randomly", "-p", "no:cacheprovider",
         "tests/report/test_html_browser.py", "-k", "timeline_times_read_as_units_fmt_us"]
    )
    print(f"\n@@ CI={ci} exit={int(code)}", flush=True)
"""
VALUES = ("true", UNSET, "", "0", "false")


@pytest.fixture(scope="module")
def browser_runs(tmp_path_factory) -> dict[str, tuple[int, str]]:
    """`CI` value -> (pytest's exit code, what it printed)."""
    env = {k: v for k, v in os.environ.items() if k != "CI"}
    env["KINETOSCOPE_TEST_CHROMIUM"] = str(tmp_path_factory.mktemp("requires") / "no-chromium")
    done = subprocess.run(
        [sys.executable, "-c", DRIVER, *VALUES],
        cwd=REPO, env=env, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    parts = re.split(r"^@@ CI=(.*) exit=(\d+)$", done.stdout, flags=re.M)
    runs = {ci: (int(code), text) for text, ci, code in zip(*[iter(parts)] * 3, strict=False)}
    assert list(runs) == list(VALUES), done.stdout[-2000:] + done.stderr[-2000:]
    return runs


def test_missing_chromium_fails_under_ci(browser_runs):
    code, stdout = browser_runs["true"]
    assert code == 1, stdout[-2000:]
    assert "1 failed" in stdout or "1 error" in stdout, stdout[-2000:]
    assert "CI is set and a test tool is missing" in stdout
    assert "apt-get install -y chromium" in stdout


def test_missing_chromium_skips_with_the_way_to_get_it_elsewhere(browser_runs):
    for ci in (UNSET, "", "0", "false"):
        code, stdout = browser_runs[ci]
        assert code == 0, (ci, stdout[-2000:])
        assert "1 skipped" in stdout
        assert "no-chromium is missing (apt-get install -y chromium)" in stdout
