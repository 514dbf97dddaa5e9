"""Findings are read in the order the report's header says: by the time a fix could save
per step, largest first, each saving bounded by the window account (issue 31, item 5);
a finding that says the window is not a steady state comes first whatever its saving."""

from __future__ import annotations

import kinetoscope
from kinetoscope.rules.base import Finding
from kinetoscope.rules.ranking import WINDOW_CAVEATS, rank

from ..conftest import corpus

#: ResNet-50 with num_workers=0: __next__ holds ~34% of the window with the device idle
WORKERS0 = "gpu/resnet50_dataloader_workers0.pt.trace.json.gz"
#: AlexNet without ProfilerSteps: 29.9 s of CUDA context creation and a 3.06 s first launch
#: in a 43.5 s window; three cold-start causes restated it before
ALEXNET = "gpu/alexnet_train.json.gz"


def test_findings_are_ranked_by_their_saving():
    report = kinetoscope.explain(corpus(WORKERS0))
    steady = [f for f in report.findings if f.id not in WINDOW_CAVEATS]
    impacts = [f.impact_us for f in steady]
    assert impacts == sorted(impacts, reverse=True)
    # the data wait is what a fix saves most of on this trace
    assert report.findings[0].id == "dataloader-bound"


def test_rank_orders_by_saving_then_severity():
    small_critical = Finding("dataloader-bound", "critical", "t", "e", "s", impact_us=10.0)
    large_info = Finding("call-count", "info", "t", "e", "s", impact_us=100.0)
    tie_warn = Finding("kernel-gap", "warn", "t", "e", "s", impact_us=10.0)
    ranked = rank([small_critical, tie_warn, large_info])
    assert [f.id for f in ranked] == ["call-count", "dataloader-bound", "kernel-gap"]


def test_a_window_caveat_is_read_first_and_one_cause_gives_one_finding():
    report = kinetoscope.explain(corpus(ALEXNET))
    first = report.findings[0]
    assert first.id == "cold-window"
    # the cold-start causes restate the one-time work: folded into the verdict's finding
    assert "cold-start" in first.merged
    assert [f.id for f in report.findings].count("cold-start") == 0
    # and it names the 29.9 s context start-up call
    assert any("cudaDeviceGetStreamPriorityRange" in (e.name or "") for e in first.evidence)
