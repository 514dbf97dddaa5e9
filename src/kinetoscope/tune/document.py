"""The JSON document of a tune session (`tune.json`, `tune --format json`).

Every trial as recorded (`asdict`), with its step-time and throughput spreads and the
words of its result as the table shows them (report/tune_render.py), under the
signature `explain DIR` knows the file by (files/own_files).
"""

from __future__ import annotations

from dataclasses import asdict
from typing import Any

from ..files.own_files import signature
from ..report.tune_render import outcome, unit
from .session import Session


def session_document(
    session: Session, diff: dict[str, Any] | None, files: list[str]
) -> dict[str, Any]:
    """The JSON document (strict JSON through `jsontext.dumps`)."""
    trials = []
    for t in session.trials:
        item = asdict(t)
        item["step_time_us"] = asdict(t.step_spread()) if t.ok else None
        item["throughput"] = asdict(t.throughput_spread()) if t.ok else None
        item["result"] = outcome(t, session.best)
        trials.append(item)
    return {
        **signature("tune"),
        "target": asdict(session.target),
        "timing": asdict(session.timing),
        "rule": session.rule,
        "throughput_unit": unit(session),
        "plans": [asdict(p) for p in session.plans],
        "skipped": [{"knob": k, "why": w} for k, w in session.skipped],
        "not_run": [{"trial": k, "why": w} for k, w in session.not_run],
        "trials": trials,
        "best": session.best,
        "best_setting": session.trial(session.best).setting if session.best else {},
        "notes": session.notes,
        "interrupted": session.interrupted,
        "seconds": session.seconds,
        "diff": diff,
        "files": files,
    }
