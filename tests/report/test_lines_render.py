"""The lines section in every format, and the `lines` command."""

from __future__ import annotations

import json

from typer.testing import CliRunner

from kinetoscope.cli import app
from kinetoscope.pipeline.build import build_report
from kinetoscope.report.html import render_html
from kinetoscope.report.markdown import render_markdown
from kinetoscope.report.text import render_text
from kinetoscope.trace import load

from ..conftest import corpus
from ..stack_traces import label, stack_trace  # noqa: F401 - the fixture

NCOMPASS = "gpu/ncompass_train_with_stack_h100nvl.pt.trace.json.gz"
NO_STACKS = "gpu/simple_add_a100.json.gz"


def test_every_format_lists_the_lines():
    report = build_report(load(corpus(NCOMPASS)))
    top = "simplenet.py:34 (train_simple_network)"
    data = json.loads(report.to_json())["lines"]
    assert data["rows"][0]["label"] == top and data["has_stacks"]
    assert "Source lines" in render_text(report) and top in render_text(report)
    assert "## Source lines" in render_markdown(report)
    assert "simplenet.py:34 (train\\_simple\\_network)" in render_markdown(report)
    html = render_html(report)
    assert "<h2>Source lines</h2>" in html and top in html
    # evidence names its line after its location, in every format
    where = ", at simplenet.py:26 (forward))"
    assert where in render_text(report, width=1000)
    assert where.replace("_", "\\_") in render_markdown(report)
    assert "at simplenet.py:26 (forward)" in html


def test_without_stacks_every_format_says_how_to_record_in_one_line():
    report = build_report(load(corpus(NO_STACKS)))
    assert json.loads(report.to_json())["lines"]["rows"] == []
    text = render_text(report)  # one line, within the report's 100 columns
    said = [line for line in text.splitlines() if line.startswith("Source lines:")]
    assert len(said) == 1 and "no Python stacks" in said[0] and "with_stack=True" in said[0]
    assert len(said[0]) <= 100
    assert "Source lines: no Python stacks" in render_markdown(report)
    html = render_html(report)
    assert "with_stack=True" in html and "<h2>Source lines</h2>" not in html


def test_lines_command(stack_trace):  # noqa: F811
    runner = CliRunner()
    done = runner.invoke(app, ["lines", str(stack_trace), "--format", "json"])
    assert done.exit_code == 0, done.output
    rows = json.loads(done.output)["lines"]["rows"]
    assert {label(f) for f in ("read_loss", "tiny_ops", "forward")} <= {r["label"] for r in rows}
    text = runner.invoke(app, ["lines", str(stack_trace), "--all-frames"]).output
    assert "<built-in method item of Tensor object>" in text and " at 0x" not in text
    assert "## Source lines" in runner.invoke(app, ["lines", str(stack_trace), "-f", "md"]).output
    done = runner.invoke(app, ["lines", str(corpus(NO_STACKS))])
    assert done.exit_code == 0 and done.output.startswith("Source lines: no Python stacks")
