"""What expectations are measured against: a `Report` (or its saved JSON) as `Facts`.

Report metrics are kept as they are (schema 2 reports carry the per-step
medians `host_time_per_step_us` and `device_busy_per_step_us` from
`analysis.stats`); for schema 1 reports, which lack them, they are derived from
the window totals, because totals of runs with different step counts do not
compare. Known ids are every
registered rule (regimes are rules too), so `not dataloder-bound` is a typo
(exit 2), not a silently passing expectation.
"""

from __future__ import annotations

from typing import Any

from ..report.model import Report
from ..rules.base import SEVERITY_ORDER
from ..rules.engine import load_rules
from .expect import Facts


def per_step(metrics: dict[str, Any]) -> dict[str, float | None]:
    """The report metrics, plus per-step forms of the window totals where it lacks them."""
    out = {k: _number(v) for k, v in metrics.items()}
    steps = max(int(out.get("steps") or 0), 1)
    for total, name in (
        ("host_time_us", "host_time_per_step_us"),
        ("device_busy_us", "device_busy_per_step_us"),
    ):
        if out.get(name) is None and out.get(total) is not None:
            out[name] = out[total] / steps
    return out


def _number(value: Any) -> float | None:
    """A metric as a float; None where it is no number or beyond a float's range (a
    saved report is read from disk: it may hold anything)."""
    if not isinstance(value, int | float):
        return None
    try:
        return float(value)
    except OverflowError:
        return None


#: Metrics a trace measures only when it holds what a rule needs, by that rule: when
#: explain lists the rule under "Not checked", the trace lacks it (no device activity,
#: no DataLoader ranges) and those metrics are 0 by default, not by measurement; the
#: rule's reason is theirs. Host-side counts (launches, sync calls) stay measured.
NEEDS = {
    "gpu-idle-breakdown": (
        "kernels_per_step",
        "device_busy_us",
        "device_busy_per_step_us",
        "device_busy_ratio",
        "device_ratio_per_step",
        "device_to_host_ratio",
    ),
    "dataloader-bound": ("data_wait_us", "data_share"),
}


def unmeasured(not_checked: dict[str, str]) -> dict[str, str]:
    """Metric -> why this trace cannot measure it, from the rules that could not run."""
    return {
        name: why
        for rule, names in NEEDS.items()
        if (why := not_checked.get(rule))
        for name in names
    }


def _worst(pairs: list[tuple[str, str]]) -> dict[str, str]:
    worst: dict[str, str] = {}
    for fid, severity in pairs:
        if fid not in worst or SEVERITY_ORDER[severity] < SEVERITY_ORDER[worst[fid]]:
            worst[fid] = severity
    return worst


def facts_from_report(report: Report) -> Facts:
    not_checked = {s.id: s.reason for s in report.not_checked}
    return Facts(
        metrics=per_step(report.metrics),
        regime=report.verdict.regime,
        # a finding folded into another on the same cause fired too, at the survivor's severity
        findings=_worst([(i, f.severity) for f in report.findings for i in (f.id, *f.merged)]),
        known_ids=frozenset(load_rules()),
        not_checked=not_checked,
        unmeasured=unmeasured(not_checked),
    )


def facts_from_json(data: dict[str, Any]) -> Facts:
    """Facts of a saved `explain --format json` report (a baseline). A part of the wrong
    type is read as absent (a finding without a string id, a verdict that is no object),
    as a part the report lacks is: only a missing `metrics` object refuses it."""
    metrics = data.get("metrics")
    if not isinstance(metrics, dict):
        raise ValueError("no 'metrics' object (expected `kinetoscope explain --format json`)")
    findings = [
        (i, severity)
        for f in _objects(data, "findings")
        if isinstance(f.get("id"), str)
        and isinstance(severity := f.get("severity", "info"), str)
        and severity in SEVERITY_ORDER
        for i in (f["id"], *(m for m in _list(f.get("merged")) if isinstance(m, str)))
    ]
    verdict = data.get("verdict")
    regime = verdict.get("regime") if isinstance(verdict, dict) else None
    not_checked = {
        s["id"]: str(s.get("reason", ""))
        for s in _objects(data, "not_checked")
        if isinstance(s.get("id"), str)
    }
    return Facts(
        metrics=per_step(metrics),
        regime=regime if isinstance(regime, str) else None,
        findings=_worst(findings),
        known_ids=frozenset(load_rules()),
        not_checked=not_checked,
        unmeasured=unmeasured(not_checked),
    )


def _list(value: Any) -> list:
    return value if isinstance(value, list) else []


def _objects(data: dict[str, Any], key: str) -> list[dict[str, Any]]:
    """The objects in the list `data[key]` (none where it is no list)."""
    return [x for x in _list(data.get(key)) if isinstance(x, dict)]
