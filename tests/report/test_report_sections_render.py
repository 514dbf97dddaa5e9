"""The verdict's host-time split, trace quality, kernel types and streams in Markdown
and HTML: each section shows the Report's numbers, and the streams section only
where there is something to say (more than one stream, or communication)."""

from __future__ import annotations

import re

import pytest

import kinetoscope
from kinetoscope.formatting.units import fmt_pct, fmt_us
from kinetoscope.report.html import render_html
from kinetoscope.report.markdown import render_markdown

from ..conftest import corpus

#: NCCL SendRecv kernels on their own streams (84, 203) beside the compute stream 7
COMM = "gpu/sampled_rank0.json.gz"
#: one compute stream (7), no collectives; the DataLoader runs in the main process
RESNET = "gpu/resnet50_dataloader_workers0.pt.trace.json.gz"


@pytest.fixture(scope="module")
def reports():
    return {name: kinetoscope.explain(corpus(name)) for name in (COMM, RESNET)}


def test_markdown_has_quality_kernel_types_and_streams_where_there_is_communication(reports):
    report = reports[COMM]
    md = render_markdown(report)
    assert f"**Trace quality: {report.quality['grade']}**" in md
    for reason in report.quality["reasons"]:
        assert reason in md.replace("\\", "")
    table = md.split("## Device time by kernel type", 1)[1].split("\n## ", 1)[0]
    rows = [line for line in table.splitlines() if line.startswith("| ") and "---" not in line]
    assert len(rows) == 1 + len(report.kernel_types["types"])
    comm = next(r for r in report.kernel_types["types"] if r["type"] == "communication")
    assert f"| communication | {comm['events']} | {fmt_us(comm['total_us'])} |" in table
    streams = md.split("## Device streams", 1)[1].split("\n## ", 1)[0]
    s = report.streams
    assert f"Communication {fmt_us(s['communication_us'])}: {fmt_pct(s['hidden_share'])}" in streams
    assert len(re.findall(r"^\| stream \d+ \|", streams, re.M)) == len(s["streams"])


def test_markdown_leaves_out_streams_for_one_stream_without_communication(reports):
    md = render_markdown(reports[RESNET])
    assert "## Device time by kernel type" in md and "| conv |" in md
    assert "## Device streams" not in md


def test_html_verdict_split_adds_up_and_each_section_is_there(reports):
    report = reports[RESNET]
    html = render_html(report)
    shares = report.verdict.decomposition
    assert sum(shares.values()) == pytest.approx(1.0, abs=1e-3)
    verdict = html.split('data-section="verdict"', 1)[1].split('data-section="quality"', 1)[0]
    widths = [float(w) for w in re.findall(r'class="part \w+" style="width: ([\d.]+)%"', verdict)]
    assert sum(widths) == pytest.approx(100.0, abs=0.1)
    # num_workers=0: the batch is loaded on the main thread inside DataLoader.__next__;
    # the bar is the window account (shares of the window, adding up to the whole)
    account = report.verdict.account
    assert f"data wait <strong>{fmt_pct(account['data'])}</strong>" in verdict
    assert account["data"] > 0.2
    assert f'<span class="grade {report.quality["grade"]}">' in html
    assert 'data-section="kernel_types"' in html and 'data-section="streams"' not in html
    assert render_html(reports[COMM]).count('data-section="streams"') == 1


def test_html_times_and_shares_print_as_text_does(reports):
    """Every time and share in the new sections is units text, as the text and Markdown
    reports print it: times with 3 significant digits (`8.00 us`, `290 ms`, never
    `393.000 us`), shares with one decimal (`fmt_pct`: `66.3%`, `5.1%`), so one figure
    reads the same digits in every format."""
    html = render_html(reports[COMM])
    start = html.index('data-section="verdict"')
    end = html.index("<h2>Kernels and device copies")
    times = re.findall(r"[>(](-?[\d.]+) (us|ms|s)[<)/ ]", html[start:end])
    assert len(times) > 30
    for number, _unit in times:
        digits = number.lstrip("-").replace(".", "").lstrip("0")
        assert number == "0" or len(digits) == 3, number
    shares = re.findall(r">(-?[\d.]+)%<", html[start:end])
    assert len(shares) > 10
    for number in shares:
        assert re.fullmatch(r"-?\d+\.\d", number), number
