"""The one escaping function for everything kinetoscope shows: `inert`.

Every string that comes from a trace or from the user's command line (names,
devices, labels, warnings, paths) passes through it before it reaches a
terminal, a Markdown or HTML report, an error line or a progress line. The
formats add their own escaping on top (Markdown's punctuation, HTML's `<&`);
this one removes what would *act* instead of being read:

- C0 controls, DEL and C1 controls: ESC and C1 CSI (0x9b) start terminal escape
  sequences (colours, cursor moves, window titles, OSC 8 hyperlinks), CR
  rewrites a line, LF splits a one-line message in two, BEL rings, NUL ends
  strings in C readers;
- bidirectional formatting characters (U+202A-U+202E, U+2066-U+2069, the
  marks U+200E, U+200F, U+061C): a right-to-left override makes a name read
  backwards and hides what follows it;
- the line and paragraph separators U+2028 and U+2029 (line breaks to some
  terminals and editors);
- unpaired surrogates (U+D800-U+DFFF), which are no characters: printing one
  raises `UnicodeEncodeError`.

Each is shown as its escape (`\\x1b`, `\\u202e`), so the text stays readable
and nothing is lost. Applying `inert` twice changes nothing more (a backslash
is not escaped), so layers may each apply it.

A string longer than `SHOWN_MAX` characters is cut there, with the count of
what was left out: nobody reads a 10 MB kernel name, and laying one out costs
more than linear time (rich folds a table cell into lines with one
`str.partition` per line over the rest of the text: a 10 MB name in `diff`'s
host-op table took over 5 minutes). JSON output carries names whole.
"""

from __future__ import annotations

import re

_ACTIVE = re.compile(
    "[\x00-\x1f\x7f-\x9f\u061c\u200e\u200f\u2028-\u202e\u2066-\u2069\ud800-\udfff]"
)


def _shown(match: re.Match) -> str:
    code = ord(match.group())
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


#: characters of one string shown at most (a long stack frame or a Triton kernel
#: name is a few hundred)
SHOWN_MAX = 4096


def inert(text: object) -> str:
    """`text` (made a `str`) with every character that could act on a terminal or
    a reader shown as its escape, and cut to `SHOWN_MAX` characters; see the
    module docstring."""
    text = text if isinstance(text, str) else str(text)
    if len(text) > SHOWN_MAX:
        left = len(text) - SHOWN_MAX
        text = f"{text[:SHOWN_MAX]}... [{left:,} more characters]"
    return _ACTIVE.sub(_shown, text)
