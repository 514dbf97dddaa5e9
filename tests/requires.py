"""A test that needs a tool outside Python (Chromium, a C++ compiler) or an optional
package: where the tool is missing it skips with the reason and the way to get it, except
under `CI` (the variable GitHub Actions, GitLab and `.ci/run` set), where a missing tool
fails the test. A CI run that silently skips the browser tests proves nothing about them.
"""

from __future__ import annotations

import os

import pytest


def in_ci() -> bool:
    """True under a CI runner: `CI` set to anything but empty, 0 or false."""
    return os.environ.get("CI", "").strip().lower() not in ("", "0", "false", "no")


def require(present: bool, missing: str, how: str) -> None:
    """Skip (or, under CI, fail) the calling test unless `present`.

    `missing` says what is absent, `how` how to get it; both appear in the message."""
    if present:
        return
    message = f"{missing} ({how})"
    if in_ci():
        pytest.fail(f"CI is set and a test tool is missing: {message}", pytrace=False)
    pytest.skip(message)
