"""The modules section in every format and in `diff`: the same tree and heaviest path
from `Report.modules`; a trace without module ranges shows the one-line hint only."""

from __future__ import annotations

import json

import kinetoscope
from kinetoscope.analysis.modules import HINT
from kinetoscope.compare.diff import diff_runs
from kinetoscope.compare.runs import load_run
from kinetoscope.report.diff_render import to_html, to_markdown, to_text
from kinetoscope.report.html import render_html
from kinetoscope.report.markdown import render_markdown
from kinetoscope.report.text import render_text

from ..conftest import corpus

NCOMPASS = "gpu/ncompass_train_with_stack_h100nvl.pt.trace.json.gz"
PLAIN = "gpu/simple_add_a100.json.gz"


def _formats(report) -> dict[str, str]:
    return {
        "text": render_text(report, width=200),
        "markdown": render_markdown(report).replace("\\", ""),
        "html": render_html(report),
    }


def test_tree_in_every_format():
    report = kinetoscope.explain(corpus(NCOMPASS))
    modules = json.loads(report.to_json())["modules"]
    assert modules["measure"] == "device_us"
    (root,) = [n for n in modules["forward"] if n["name"] == "SimpleNet_0"]
    assert root["kind"] == "forward" and root["heaviest"]
    assert {c["name"] for c in root["children"]} == {"Linear_0", "Linear_1", "Linear_2", "ReLU_0"}
    assert any(n["kind"] == "backward" for n in modules["backward"])
    for name, out in _formats(report).items():
        assert "Modules" in out, name
        assert "Heaviest forward path by device time: SimpleNet_0 > " in out.replace("&gt;", ">"), (
            name
        )
        assert "CrossEntropyLoss_0" in out, name
    assert '<details class="module" open>' in _formats(report)["html"]


def test_no_modules_hint_in_every_format():
    report = kinetoscope.explain(corpus(PLAIN))
    assert json.loads(report.to_json())["modules"] == {"hint": HINT}
    for name, out in _formats(report).items():
        assert "with_stack=True" in out, name
        assert "Heaviest" not in out and 'details class="module"' not in out, name


def test_diff_compares_module_paths():
    d = diff_runs(load_run(corpus(NCOMPASS)), load_run(corpus(PLAIN)))
    modules = json.loads(json.dumps(d.to_dict()))["modules"]
    assert modules["a_has_modules"] and not modules["b_has_modules"]
    rows = {(r["kind"], r["path"]): r for r in modules["modules"]}
    linear = rows[("forward", "SimpleNet_0/Linear_0")]
    assert linear["b"] is None and linear["a"]["calls_per_step"] > 0
    for out in (to_text(d), to_markdown(d), to_html(d)):
        assert "Modules (A -" in out and "SimpleNet_0/Linear_0" in out.replace("\\", "")
        assert "B: no module ranges" in out


def test_no_module_diff_between_plain_runs():
    d = diff_runs(load_run(corpus(PLAIN)), load_run(corpus(PLAIN)))
    assert d.modules == {}
