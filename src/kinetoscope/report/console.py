"""How wide text output is: one policy for every command."""

from __future__ import annotations

import shutil
import sys


def output_width() -> int:
    """The terminal's width when printing to one (at most 120), else 100 columns,
    so piped or redirected reports read the same everywhere."""
    if not sys.stdout.isatty():
        return 100
    return min(shutil.get_terminal_size((100, 24)).columns, 120)
