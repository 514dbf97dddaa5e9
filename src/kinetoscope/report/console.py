"""Terminal output policy for every command: how wide, and what is safe to print."""

from __future__ import annotations

import re
import shutil
import sys


def output_width() -> int:
    """The terminal's width when printing to one (at most 120), else 100 columns,
    so piped or redirected reports read the same everywhere."""
    if not sys.stdout.isatty():
        return 100
    return min(shutil.get_terminal_size((100, 24)).columns, 120)


#: C0 controls, DEL and C1 controls: ESC starts terminal escape sequences (colours,
#: cursor moves, window titles, OSC 8 links), CR rewrites a line, BEL rings
_CONTROL = re.compile("[\x00-\x1f\x7f-\x9f]")


def inert(text: str) -> str:
    """`text` with every control character shown as `\\xNN`, so names from a
    trace print as text and never act on the terminal."""
    return _CONTROL.sub(lambda m: f"\\x{ord(m.group()):02x}", text)
