"""The Report: Python API, JSON contract, renderers, and a rule that throws."""

from __future__ import annotations

import json
import re

import pytest

import kinetoscope
from kinetoscope.errors import UsageError
from kinetoscope.report.html import render_html
from kinetoscope.report.markdown import render_markdown
from kinetoscope.report.text import render_text
from kinetoscope.rules import base
from kinetoscope.rules.engine import load_rules
from kinetoscope.rules.regime import REGIMES

from ..conftest import corpus, corpus_files
from ..corpus_families import by_family

BERT = "gpu/tracelens_h100__gaunernst_bert-small-uncased__1016001.json.gz"
RESNET_NS = "gpu/resnet_train_ns.pt.trace.json.gz"
# five different traces: NVIDIA/AMD, with/without steps, host-only, many steps
LOOKED_AT = [
    BERT,
    RESNET_NS,
    "cpu/cpu_only_rank34.pt.trace.json.gz",
    "gpu/tracelens_mi300__resnet_act_checkpoint.json.gz",
    "gpu/param_linear_train_2080ti.json.gz",
    "gpu/switch_transformer_moe_a100.json.gz",
]
METRIC_KEYS = {
    "host_time_us",
    "device_busy_us",
    "device_busy_ratio",
    "kernels_per_step",
    "launches_per_step",
    "step_time_us",
}


def test_explain_accepts_a_path_or_a_trace():
    path = corpus(BERT)
    from_path = kinetoscope.explain(path)
    from_trace = kinetoscope.explain(kinetoscope.load(path))
    assert from_path.to_dict() == from_trace.to_dict()
    assert isinstance(from_path, kinetoscope.Report)


def test_json_contract():
    report = kinetoscope.explain(corpus(BERT))
    data = json.loads(report.to_json())
    assert data["kinetoscope"] == kinetoscope.__version__ and data["schema_version"] == 2
    assert {"path", "devices", "versions", "window"} <= set(data["trace"])
    assert data["trace"]["devices"][0]["name"] == "NVIDIA H100 80GB HBM3"
    assert data["verdict"]["regime"] == "overhead-bound"
    # the device's 309 us of the 4.43 ms steady window (issue 31: the window account)
    assert "309 us" in data["verdict"]["summary"] and "4.43 ms" in data["verdict"]["summary"]
    assert sum(data["verdict"]["account"].values()) == pytest.approx(1.0, abs=1e-3)
    path = data["critical_path"]
    assert sum(s["dur_us"] for s in path["segments"]) == pytest.approx(
        data["verdict"]["account_us"]["window_us"], rel=1e-6
    )
    assert set(data["metrics"]) >= METRIC_KEYS
    assert data["metrics"]["kernels_per_step"] == 60
    step = data["steps"][0]
    assert step["label"] == "#6" and step["kernels"] == 60 and step["launches"] == 60
    for finding in data["findings"]:
        assert {
            "id",
            "severity",
            "title",
            "explanation",
            "suggestion",
            "impact_us",
            "evidence",
        } <= set(finding)
    # ranked by the saving a fix could give (docs/report-schema.md), largest first
    impacts = [f["impact_us"] for f in data["findings"]]
    assert impacts == sorted(impacts, reverse=True)
    assert {n["id"] for n in data["not_checked"]} >= {"cold-start"}  # one step only


def test_findings_and_metrics_are_attributes():
    report = kinetoscope.explain(corpus(BERT))
    assert "overhead-bound" in [f.id for f in report.findings]
    assert report.metrics["device_busy_us"] == pytest.approx(309.438, abs=1e-3)


def test_outlier_steps_are_flagged():
    # tiny transformer block: 1.280 ms first step vs a median of 0.860 ms -> 1.5x
    report = kinetoscope.explain(corpus("gpu/tiny_transformer_block_h100.pt.trace.json.gz"))
    flags = [s.outlier for s in report.steps]
    assert flags[0] == "1.5x the median step" and flags[1:] == [None, None]


def test_evidence_timestamps_are_relative_to_the_trace_start():
    report = kinetoscope.explain(corpus(RESNET_NS), rules=["dispatch-dead-window"])
    evidence = report.findings[0].evidence[0]
    trace = kinetoscope.load(corpus(RESNET_NS))
    step = trace.steps[0]
    assert evidence.ts_us == pytest.approx(step.start - trace.start_time)


def test_unknown_rule_or_threshold_is_a_usage_error():
    with pytest.raises(UsageError, match="unknown rule 'nope'"):
        kinetoscope.explain(corpus(BERT), rules=["nope"])
    with pytest.raises(UsageError, match="has no threshold 'x'"):
        kinetoscope.explain(corpus(BERT), config={"hotspot": {"x": 1.0}})


@pytest.fixture
def broken_rule():
    """A registered rule that throws; removed again after the test."""
    load_rules()

    @base.rule("test-broken", "test", "always throws")
    def _broken(ctx):
        raise RuntimeError("boom")

    yield "test-broken"
    del base.REGISTRY["test-broken"]


def test_a_rule_that_throws_is_reported_and_the_rest_prints(broken_rule, monkeypatch):
    monkeypatch.delenv("KINETOSCOPE_STRICT_RULES", raising=False)  # the degradation itself
    report = kinetoscope.explain(corpus(BERT))
    skipped = {s.id: s for s in report.not_checked}
    assert "RuntimeError: boom" in skipped[broken_rule].reason
    assert report.verdict.regime == "overhead-bound"
    assert any(f.id == "overhead-bound" for f in report.findings)
    text = render_text(report)
    assert "test-broken" in text and "boom" in text and "Verdict" in text


@pytest.mark.parametrize("relative", LOOKED_AT)
def test_text_fits_100_columns_and_has_every_section(relative):
    report = kinetoscope.explain(corpus(relative))
    text = render_text(report, width=100)
    assert max(len(line) for line in text.splitlines()) <= 100
    order = [text.index(h) for h in ("Trace", "Verdict", "Steps", "Findings")]
    assert order == sorted(order)
    assert report.verdict.regime.upper() in text
    for finding in report.findings:
        assert finding.id in text


def test_markdown_has_the_sections_and_a_step_table():
    md = render_markdown(kinetoscope.explain(corpus(RESNET_NS)))
    assert "**Verdict: compute-bound**" in md
    assert md.count("\n| #10") == 5  # steps #101..#105
    assert "## Findings" in md and "`dispatch-dead-window`" in md


def test_html_is_self_contained_with_a_timeline():
    report = kinetoscope.explain(corpus(RESNET_NS))
    html = render_html(report)
    assert html.lstrip().startswith("<!DOCTYPE html>")
    # no external resources: no src/href attributes, no url(), no links to other hosts
    assert not re.search(r"""(src|href)\s*=""", html)
    assert "url(" not in html and "@import" not in html
    payload = json.loads(
        re.search(r'<script type="application/json">(.*?)</script>', html, re.S).group(1)
    )
    assert [s[0] for s in payload["steps"]] == [s.label for s in report.steps]  # 5 steps
    assert {lane["kind"] for lane in payload["lanes"]} == {"host", "device"}
    # every complete event on a host thread or device stream is on the canvas, once
    trace = kinetoscope.load(corpus(RESNET_NS))
    on_lanes = (~trace.is_instant & (trace.lane_kind > 0) & (trace.cat != 12)).sum()
    assert len(payload["dur"]) == sum(row[2] for row in payload["rows"]) == on_lanes
    # each finding's timestamped evidence points at events or at a span to shade
    for finding, located in zip(report.findings, payload["findings"], strict=True):
        timed = [e for e in finding.evidence if e.ts_us is not None]
        assert len(located["events"]) + len(located["spans"]) == len(timed)
    fragment = report._repr_html_()
    assert "<!DOCTYPE" not in fragment and "data-timeline" in fragment


def test_timeline_gives_a_threads_python_frames_a_lane_of_their_own():
    """BERT-small was recorded with with_stack: thread 19392 runs 1380 python_function
    events (36 frames deep) around its ops, thread 0 only 5 (a tqdm monitor). The ops get
    the thread's lane, the frames a "python stack" lane under it; a thread with frames
    only keeps one lane. ResNet (no python_function events) has no such lane."""
    from kinetoscope.pipeline.timeline_data import timeline_events
    from kinetoscope.trace import Cat

    trace = kinetoscope.load(corpus(BERT))
    payload = timeline_events(trace, [], [])
    lanes = payload["lanes"]
    names = [(lane["label"], lane.get("of")) for lane in lanes]
    assert names[:3] == [
        ("thread 19392 (python3)", None),
        ("python stack", "thread 19392 (python3)"),
        ("thread 0 (python3)", None),
    ]
    # which group each payload event is drawn in, per lane
    groups = payload["groups"]
    kinds: dict[int, set[str]] = {}
    count: dict[int, int] = {}
    k = 0
    for lane, _, n in payload["rows"]:
        for label in payload["label"][k : k + n]:
            kinds.setdefault(lane, set()).add(groups[payload["labels"][label][1]])
        count[lane] = count.get(lane, 0) + n
        k += n
    assert "python" not in kinds[0] and kinds[1] == {"python"} and kinds[2] == {"python"}
    assert (count[1], count[2]) == (1380, 5)
    assert lanes[0]["rows"] < 16 <= lanes[1]["rows"]  # the ops fit; the frames are deep
    on_lanes = (~trace.is_instant & (trace.lane_kind > 0) & (trace.cat != int(Cat.MEMORY))).sum()
    assert len(payload["dur"]) == on_lanes  # every event once
    plain = timeline_events(kinetoscope.load(corpus(RESNET_NS)), [], [])
    assert not any("of" in lane for lane in plain["lanes"])


# one trace per corpus family; every corpus trace under `pytest -m corpus`
@pytest.mark.parametrize("path", by_family(corpus_files()), ids=lambda p: p.name)
def test_every_corpus_trace_explains_without_a_failing_rule(path):
    report = kinetoscope.explain(path)
    failed = [s for s in report.not_checked if s.reason.startswith("rule failed")]
    assert failed == []
    # a regime finding may be folded into the finding that names its cause (rules.merge)
    regimes = [i for f in report.findings for i in (f.id, *f.merged) if i in REGIMES]
    assert regimes == [report.verdict.regime]
    json.loads(report.to_json())


def test_text_cuts_long_step_tables_but_keeps_outliers(tmp_path):
    from ..conftest import op, write_trace

    events = []
    for n in range(15):
        dur = 300.0 if n == 13 else 100.0  # step #13 lasts 3x the median
        events.append(op(f"ProfilerStep#{n}", n * 400.0, dur, cat="user_annotation"))
        events.append(op("aten::add", n * 400.0 + 1.0, 50.0))
    report = kinetoscope.explain(write_trace(tmp_path / "many.json", events))
    assert [s.label for s in report.steps if s.outlier] == ["#13"]
    text = render_text(report)
    rows = [line.split()[0] for line in text.splitlines() if re.match(r"#\d+ ", line)]
    assert rows == [f"#{n}" for n in range(12)] + ["#13"]
    assert "... 2 more steps (see --format json)" in text
    assert "<- 3.0x the median step" in text


def test_html_lists_findings_in_the_reading_order_of_every_other_format():
    """The HTML page re-sorted findings by severity and impact alone, against
    `rules.ranking` and the text, Markdown and JSON order. On alexnet the cold window
    comes first everywhere (a window caveat), then the savings."""
    report = kinetoscope.explain(corpus("gpu/alexnet_train.json.gz"))
    order = [f["id"] for f in report.to_dict()["findings"]]
    assert order[0] == "cold-window"
    text = render_text(report)
    assert text.index("cold-window") < text.index(order[1])
    page = render_html(report).split("<h2>Findings</h2>", 1)[1]
    card = r'<div class="finding [^"]*" id="finding-(\d+)"[^>]*>\s*<p><span class="sev [a-z]+">'
    cards = re.findall(card + r"[a-z]+</span> <code>([^<]+)</code>", page)
    assert [int(i) for i, _ in cards] == list(range(len(order)))
    assert [name for _, name in cards] == order
