"""The MoE section in every format: text, Markdown, HTML and JSON show the same dispatch,
loads and parts from `Report.moe`; a model without experts shows none of it."""

from __future__ import annotations

import json

import pytest

import kinetoscope
from kinetoscope.formatting.units import fmt_us
from kinetoscope.report.html import render_html
from kinetoscope.report.markdown import render_markdown
from kinetoscope.report.text import render_text

from ..conftest import corpus
from ..moe_traces import moe_traces  # noqa: F401 - fixture

SWITCH = "gpu/switch_transformer_moe_a100.json.gz"


def _formats(report) -> dict[str, str]:
    return {
        "text": render_text(report, width=200),
        "markdown": render_markdown(report).replace("\\", ""),
        "html": render_html(report),
    }


def test_topk_recording_in_every_format(moe_traces):  # noqa: F811
    report = kinetoscope.explain(moe_traces["moe_topk"])
    moe = json.loads(report.to_json())["moe"]
    assert moe["dispatch"] == "sparse"
    loads = json.loads(moe_traces["loads"].read_text())
    assert sorted(moe["imbalance"]["loads"]) == sorted(loads)
    rows = ", ".join(str(n) for n in loads if n)  # the experts that ran, in order
    for name, out in _formats(report).items():
        assert "Mixture of experts" in out, name
        assert "Dispatch: sparse" in out, name
        assert f"{moe['imbalance']['max']:.2f}x the mean" in out, name
        assert rows in out, name
        for part in moe["parts"]:
            assert part["part"] in out, name
            assert fmt_us(part["host_us"]) in out, name


def test_switch_dense_in_every_format():
    report = kinetoscope.explain(corpus(SWITCH))
    gemms = next(p for p in report.moe["parts"] if p["part"] == "expert GEMMs")
    for name, out in _formats(report).items():
        assert "Dispatch: dense" in out and "1,024 tokens" in out, name
        assert fmt_us(gemms["device_us"]) in out, name
    assert "Expert load imbalance" not in render_text(report, width=200)


@pytest.mark.parametrize("which", ["recorded", "corpus"])
def test_no_moe_section_without_experts(moe_traces, which):  # noqa: F811
    path = (
        moe_traces["mlp_topk_head"]
        if which == "recorded"
        else corpus("gpu/resnet_train_ns.pt.trace.json.gz")
    )
    report = kinetoscope.explain(path)
    assert json.loads(report.to_json())["moe"] == {}
    for name, out in _formats(report).items():
        assert "Mixture of experts" not in out, name
