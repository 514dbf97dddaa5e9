"""Names from a trace are data, never markup or terminal commands, in every format."""

from __future__ import annotations

import gzip
import json
import re

import pytest

import kinetoscope
from kinetoscope.report.markdown import render_markdown
from kinetoscope.report.text import render_text
from tests.conftest import corpus

NASTY = "\x1b[31m\x1b]0;owned\x07|`<script>alert(1)</script>&amp;*_[x](y)\r\n"


@pytest.fixture(scope="module")
def report(tmp_path_factory):
    """A real trace whose kernel and op names and device name end in NASTY."""
    data = json.loads(gzip.decompress(corpus("gpu/triton_example.json.gz").read_bytes()))
    for event in data["traceEvents"]:
        if event.get("cat") in ("kernel", "cpu_op", "cuda_runtime"):
            event["name"] += NASTY
    for device in data.get("deviceProperties", []):
        device["name"] += NASTY
    path = tmp_path_factory.mktemp("nasty") / ("trace" + "\x1b[2J|`<i>" + ".json")
    path.write_text(json.dumps(data))
    return kinetoscope.explain(path)


def test_the_nasty_names_reach_the_report(report):
    """Otherwise the checks below would pass vacuously."""
    text = report.to_json()
    assert "<script>" in text and "\\u001b[31m" in text
    assert any(NASTY in (e.name or "") for f in report.findings for e in f.evidence)


@pytest.mark.parametrize("color", [False, True])
def test_terminal_output_holds_no_control_characters_from_the_trace(report, color):
    out = render_text(report, color=color)
    if color:  # rich's own colour codes are the only escapes left
        out = re.sub(r"\x1b\[[0-9;]*m", "", out)
    assert "\x1b" not in out and "\x07" not in out and "\r" not in out
    assert "\\x1b[31m" in out  # shown, not acted on


def test_markdown_escapes_pipes_backticks_and_html(report):
    md = render_markdown(report)
    assert "\x1b" not in md and "\r" not in md
    # inside a code span `<script>` is literal text; outside one it must be escaped
    outside_code = re.sub(r"(`+)(?!`).*?(?<!`)\1(?!`)", "", md)
    assert "<script>" not in outside_code
    assert "\\<script\\>" in md
    assert "NVIDIA" in md and "\\|" in md
    # every row has its table's header's column count: no cell split by a name
    # (the steps table has 8 columns, kernel types 5, streams 5)
    header_cells = None
    for line in md.splitlines():
        if not line.startswith("|"):
            header_cells = None
        elif line.startswith("|---"):
            continue
        elif header_cells is None:
            header_cells = line.count("|")
        else:
            assert line.replace("\\|", "").count("|") == header_cells, line
    assert "| step | starts at | duration |" in md


def test_html_escapes_everything_from_the_trace(report):
    pytest.importorskip("jinja2")
    from kinetoscope.report.html import render_html

    page = render_html(report)
    # the page's own <script> blocks are there; the trace's never is, unescaped
    assert "<script>alert(1)" not in page and "<i>" not in page
    assert "&lt;script&gt;alert(1)" in page
