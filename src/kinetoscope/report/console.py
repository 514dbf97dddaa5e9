"""Terminal output policy for every command: how wide, and what is safe to print."""

from __future__ import annotations

import shutil
import sys

from ..formatting.escaping import inert


def output_width() -> int:
    """The terminal's width when printing to one (at most 120), else 100 columns,
    so piped or redirected reports read the same everywhere."""
    if not sys.stdout.isatty():
        return 100
    return min(shutil.get_terminal_size((100, 24)).columns, 120)


#: the escaper every command uses, here for the renderers that import it from here
__all__ = ["inert", "output_width"]
