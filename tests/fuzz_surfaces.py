"""What the surface fuzzers share (MCP tools, `view`'s HTTP server, the HTML reports in
Chromium): the characters no answer may hold raw, the marker only files outside what
is served hold, and hostile strings. Each run is logged with `tests.fuzz_log.log_run`."""

from __future__ import annotations

from tests.test_fuzz import ACTIVE

__all__ = ["ACTIVE", "HOSTILE_TEXT", "MARKER"]

#: a string that only files outside the served root hold: it must never come back
MARKER = "kinetoscope-fuzz-secret-7f3a9c"

#: strings an agent or a page may be handed: control and bidi characters, markup,
#: regex bombs, numbers past every range, very long text
HOSTILE_TEXT = [
    "",
    " ",
    "\x00",
    "a\x00b",
    "\x1b[31mred\x1b[0m",
    "\x1b]8;;http://x\x1b\\link\x1b]8;;\x1b\\",
    "bel\x07",
    "c1\x9b2J",
    "two\nlines\r",
    "\u202eevil\u2066",
    "\u2028\u2029",
    "\ud800",
    "[bold]markup[/]",
    "</script><script>window.__pwned=1</script>",
    "(a+)+$",
    "(x+x+)+y",
    "(?=a)",
    "\\1",
    "[",
    "*" * 1000,
    "?" * 1000,
    "a" * 100_000,
    "1-99999999999999999999",
    "99999999999999999999",
    "-1",
    "nan",
    "inf:-inf",
    "1e999:",
    "5:3",
    "0:",
    "3-1",
    "1009-50000000",
    "%2e%2e/",
    "~",
    "$HOME",
    "`id`",
    "{{7*7}}",
]
