"""`diff` with MoE runs: each part's time per step in both runs, dispatch and the worst
load (compare/moe_diff.py), in the JSON and the rendered sections; nothing without MoE."""

from __future__ import annotations

import json

from kinetoscope.compare.diff import diff_runs
from kinetoscope.compare.runs import load_run
from kinetoscope.report.diff_render import to_html, to_markdown, to_text

from ..conftest import corpus
from ..moe_traces import moe_traces  # noqa: F401 - fixture


def test_dense_against_topk(moe_traces):  # noqa: F811
    d = diff_runs(load_run(moe_traces["moe_dense"]), load_run(moe_traces["moe_topk"]))
    moe = json.loads(json.dumps(d.to_dict()))["moe"]
    assert moe["a"]["dispatch"] == "dense" and moe["a"]["max_imbalance"] is None
    assert moe["b"]["dispatch"] == "sparse" and moe["b"]["max_imbalance"] > 1
    parts = {row["part"]: row for row in moe["parts"]}
    assert parts["permutation"]["a"] is None  # the dense layer moves no token
    assert parts["permutation"]["b"]["ops"] > 0
    for out in (to_text(d), to_markdown(d), to_html(d)):
        assert "Mixture of experts (A -" in out  # "->" is escaped in Markdown and HTML
        assert "A: dispatch dense" in out and "B: dispatch sparse" in out


def test_no_moe_section_between_dense_models():
    d = diff_runs(
        load_run(corpus("gpu/compare_base.json.gz")), load_run(corpus("gpu/compare_test.json.gz"))
    )
    assert d.moe == {}
    assert "Mixture of experts" not in to_text(d)
