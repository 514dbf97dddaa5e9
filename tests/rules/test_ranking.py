"""Findings are read in severity order, then by the time a fix saves per step (issue 10,
class 9), on real traces: ranking by impact alone put infos above criticals."""

from __future__ import annotations

import kinetoscope
from kinetoscope.rules.base import SEVERITY_ORDER, Finding
from kinetoscope.rules.engine import load_rules
from kinetoscope.rules.ranking import VERDICT_FAMILY, rank

from ..conftest import corpus

#: ResNet-50 with num_workers=0: __next__ holds ~40% of each step, so dataloader-bound is
#: critical, while call-count (an info) estimates a larger per-step impact (4398 aten::empty)
WORKERS0 = "gpu/resnet50_dataloader_workers0.pt.trace.json.gz"
#: AlexNet without ProfilerSteps: overhead-bound's estimate is the whole host time (43 s),
#: of which the gaps and launch latency it reports beside it are parts
ALEXNET = "gpu/alexnet_train.json.gz"


def _ids(report) -> list[str]:
    return [f.id for f in report.findings]


def test_critical_ranks_above_a_larger_info():
    report = kinetoscope.explain(corpus(WORKERS0))
    by_id = {f.id: f for f in report.findings}
    assert by_id["dataloader-bound"].severity == "critical"
    # with or without a larger info on this trace, the critical leads and severities sort
    assert report.findings[0].id == "dataloader-bound"
    # the rule itself, on findings where the info estimates 10x the critical's saving
    small_critical = Finding("dataloader-bound", "critical", "t", "e", "s", impact_us=10.0)
    large_info = Finding("call-count", "info", "t", "e", "s", impact_us=100.0)
    ranked = rank([large_info, small_critical], load_rules())
    assert [f.id for f in ranked] == ["dataloader-bound", "call-count"]
    severities = [SEVERITY_ORDER[f.severity] for f in report.findings]
    assert severities == sorted(severities)


def test_verdict_ranks_after_the_causes_of_its_severity():
    report = kinetoscope.explain(corpus(ALEXNET))
    rules = load_rules()
    warns = [f for f in report.findings if f.severity == "warn"]
    verdict = [f for f in warns if rules[f.id].family == VERDICT_FAMILY]
    assert [f.id for f in verdict] == ["overhead-bound"]
    assert warns[-1].id == "overhead-bound"  # its 43 s estimate would otherwise top them all
    assert warns[0].impact_us < verdict[0].impact_us
    impacts = [f.impact_us for f in warns[:-1]]
    assert impacts == sorted(impacts, reverse=True)
