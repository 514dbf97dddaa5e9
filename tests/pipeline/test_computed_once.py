"""An analysis both a rule and a report section read is computed once per report (issue 24:
the trace-quality rule and the `quality` section each ran `trace_quality`, the stream rules
and the `streams` section each ran `stream_report`)."""

from __future__ import annotations

import kinetoscope
from kinetoscope.analysis import quality, streams

from ..conftest import corpus


def test_quality_and_streams_are_computed_once_per_report(monkeypatch):
    calls = {"quality": 0, "streams": 0}
    dropped, work = quality._dropped, streams.window_device_work

    def counted_dropped(trace):
        calls["quality"] += 1
        return dropped(trace)

    def counted_work(trace):
        calls["streams"] += 1
        return work(trace)

    monkeypatch.setattr(quality, "_dropped", counted_dropped)
    monkeypatch.setattr(streams, "window_device_work", counted_work)
    trace = kinetoscope.load(corpus("gpu/resnet_train_ns.pt.trace.json.gz"))
    report = kinetoscope.explain(trace)
    assert report.to_dict()["quality"]["grade"]  # the section was built
    assert report.to_dict()["streams"]["streams"]
    assert calls == {"quality": 1, "streams": 1}  # stream_report's first step, once
