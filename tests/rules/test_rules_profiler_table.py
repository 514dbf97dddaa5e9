"""Profiler-table rules (hotspot, call-count, deep-child-cost) on corpus and torch traces."""

from __future__ import annotations

import pytest

import kinetoscope
from kinetoscope.analysis.table import key_averages

from ..conftest import corpus
from ..torch_traces import torch_traces  # noqa: F401 - fixture

BERT = "gpu/tracelens_h100__gaunernst_bert-small-uncased__1016001.json.gz"
TINY_BLOCK = "gpu/tiny_transformer_block_h100.pt.trace.json.gz"


def run(path, rule_id, **config):
    report = kinetoscope.explain(
        path, config={rule_id: config} if config else None, rules=[rule_id]
    )
    assert report.not_checked == []
    return [f for f in report.findings if f.id == rule_id]


def test_hotspot_fires_when_one_kernel_owns_the_device():
    # compare_base: one kernel is 72.4% of the 1.686 ms Self device total (kernels + copies)
    # launched inside the two profiled steps; the whole trace's table has 1.694 ms (8 us of
    # copies and memsets launched outside the steps), the rule reads the active window
    path = corpus("gpu/compare_base.json.gz")
    (finding,) = run(path, "hotspot")
    assert finding.measured["share"] == pytest.approx(0.724, abs=1e-3)
    assert finding.measured["total_us"] == pytest.approx(1686.0, abs=1)
    assert key_averages(kinetoscope.load(path)).self_device_total_us == pytest.approx(1694, abs=1)
    assert "in the active window" in finding.evidence[0].text
    assert finding.evidence[0].name == finding.measured["name"]
    # the threshold is respected: above the measured share it stays silent
    assert run(corpus("gpu/compare_base.json.gz"), "hotspot", min_share=0.75) == []


def test_hotspot_uses_cpu_self_time_in_host_only_traces():
    (finding,) = run(corpus("cpu/cpu_only_rank34.pt.trace.json.gz"), "hotspot")
    assert finding.measured["name"] == "gloo:all_reduce"
    assert "self CPU" in finding.title


def test_hotspot_silent_when_device_time_is_spread():
    assert run(corpus(BERT), "hotspot") == []
    assert run(corpus(TINY_BLOCK), "hotspot") == []


def test_call_count_fires_on_a_python_loop_of_tiny_ops(torch_traces):  # noqa: F811
    (finding,) = run(torch_traces["loop"], "call-count")
    assert finding.measured["name"] == "aten::add"
    assert finding.measured["calls"] == 450  # 150 per step, 3 active steps
    assert finding.evidence[0].text.startswith("450 calls (150 per step")


def test_call_count_fires_on_corpus():
    # param_linear: aten::mm 1640 calls, 39x the median op's 42
    (finding,) = run(corpus("gpu/param_linear_train_2080ti.json.gz"), "call-count")
    assert finding.measured["calls"] == 1640 and finding.measured["median_calls"] == 42


def test_call_count_silent_without_outliers(torch_traces):  # noqa: F811
    assert run(corpus(BERT), "call-count") == []
    assert run(torch_traces["warm"], "call-count") == []


def test_deep_child_cost_names_the_child_that_owns_the_time():
    # tiny transformer block: aten::linear 332 us total, 14x its self time, in aten::addmm
    (finding,) = run(corpus(TINY_BLOCK), "deep-child-cost")
    assert finding.measured["name"] == "aten::linear"
    assert finding.measured["cpu_total_us"] == pytest.approx(332.0)
    assert "aten::addmm" in finding.title


def test_deep_child_cost_silent_on_flat_profiles():
    assert run(corpus(BERT), "deep-child-cost") == []


def test_hotspot_in_a_host_only_trace_counts_the_step_and_sends_nowhere_device():
    (finding,) = run(corpus("cpu/cpu_only_rank34.pt.trace.json.gz"), "hotspot")
    # 2 gloo:all_reduce ranges start inside the one 210 ms step (8 more run after it)
    assert finding.evidence[0].text.endswith("in the active window (62.1%), 2 calls")
    assert "kernel" not in finding.suggestion
