"""Recognise reports kinetoscope wrote itself, by their content, not their names.

`explain DIR -o DIR/report.json` puts a report next to the traces; the next
`explain DIR` must not read it as a trace. Names prove nothing (a trace can be
called `report.json`), so the first bytes decide: a Kineto trace is a JSON
object (ours carry an *object* under `"kinetoscope"`, the run's metadata),
while every report `explain` renders opens with a fixed signature:

- JSON: `{"kinetoscope": "<version string>", "schema_version": ...` for a
  report (docs/report-schema.md), `{"kinetoscope": "<version>", "kind": ...}`
  for the other JSON kinetoscope writes (`signature`: `diff`, `sweep`,
  `ranks`);
- Markdown: `# kinetoscope: ` (a report), `# kinetoscope diff`, or the
  multi-rank `## <N> ranks, median step` heading;
- HTML: a document whose `<title>` starts with `kinetoscope`;
- text: `Trace <path>` then the `Verdict` line, or the multi-rank
  `<N> ranks, median step` heading.
"""

from __future__ import annotations

import re
import zlib
from pathlib import Path
from typing import Any

from .._version import __version__

_HEAD_BYTES = 4096
_JSON_REPORT = re.compile(
    rb'^\s*\{\s*"kinetoscope"\s*:\s*"[^"]*"\s*,\s*"(schema_version|kind)"\s*:'
)
_MARKDOWN = re.compile(rb"^\s*(# kinetoscope: |# kinetoscope diff\s|## \d+ ranks, median step )")
_HTML = re.compile(rb"^\s*<!DOCTYPE html>.*?<title>kinetoscope", re.S | re.I)
_TEXT = re.compile(rb"^(\x1b\[[0-9;]*m)*Trace .*\n(.*\n)*?(\x1b\[[0-9;]*m)*Verdict ")
_RANKS_TEXT = re.compile(rb"^\s*\d+ ranks, median step ")


def signature(kind: str) -> dict[str, Any]:
    """The first keys of a JSON document kinetoscope writes that is not a report
    (`kind`: diff, sweep, ranks): what `is_kinetoscope_report` knows it by."""
    return {"kinetoscope": __version__, "kind": kind}


def head(path: Path, size: int = _HEAD_BYTES) -> bytes:
    """The first `size` bytes of the file's content (decompressed when it is gzip)."""
    with open(path, "rb") as handle:
        raw = handle.read(size)
    if raw[:2] != b"\x1f\x8b":
        return raw
    try:
        return zlib.decompressobj(16 + zlib.MAX_WBITS).decompress(raw, size)
    except zlib.error:
        return b""


def is_kinetoscope_report(path: Path) -> bool:
    """True when the file is a report kinetoscope rendered (any format), not a trace."""
    try:
        start = head(path)
    except OSError:
        return False
    return any(
        pattern.match(start) for pattern in (_JSON_REPORT, _MARKDOWN, _HTML, _TEXT, _RANKS_TEXT)
    )
