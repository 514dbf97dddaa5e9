"""Markdown rendering of a `Report`, for pull requests, issues and notebooks."""

from __future__ import annotations

from ..rules.base import Evidence
from ..units import fmt_us
from .evidence import evidence_line
from .model import Report
from .phrases import device_cell, step_counts, steps_line


def render_markdown(report: Report) -> str:
    t, v = report.trace, report.verdict
    out = [f"# kinetoscope: `{t.path}`", ""]
    devices = ", ".join(sorted({d["name"] for d in t.devices if d.get("name")})) or "none listed"
    versions = ", ".join(f"{k} {val}" for k, val in t.versions.items()) or "not recorded"
    out += [
        f"- **Devices**: {devices}",
        f"- **Versions**: {versions}",
        f"- **Window**: {fmt_us(t.window['dur_us'])} from +{fmt_us(t.window['start_us'])}, "
        f"{step_counts(report)}, {t.events} events",
        "",
        f"**Verdict: {v.regime}**: {v.summary.split(': ', 1)[-1]}",
        "",
        "## Steps",
        "",
        "| step | starts at | duration | host busy | device busy | kernels | launches | |",
        "|---|---:|---:|---:|---:|---:|---:|---|",
    ]
    for row in report.steps:
        flag = f"outlier: {row.outlier}" if row.outlier else ""
        out.append(
            f"| {row.label} | +{fmt_us(row.start_us)} | {fmt_us(row.dur_us)} | "
            f"{fmt_us(row.host_busy_us)} | {device_cell(report, row)} | {row.kernels} | "
            f"{row.launches} | {flag} |"
        )
    out += [
        "",
        steps_line(report).capitalize() + ".",
        "",
        "## Findings",
        "",
    ]
    if not report.findings:
        out += ["No rule fired.", ""]
    per = "/step" if report.trace.window["steps"] else " over the trace"
    for number, f in enumerate(report.findings, 1):
        impact = f" (~{fmt_us(f.impact_us)}{per})" if f.impact_us > 0 else ""
        out += [
            f"### {number}. `{f.id}` [{f.severity}]{impact}",
            "",
            f"**{_escape(f.title)}**",
            "",
            _escape(f.explanation),
            "",
            f"*Try:* {_escape(f.suggestion)}",
            "",
        ]
        out += [f"- {_evidence(e)}" for e in f.evidence]
        out.append("")
    if report.not_checked:
        out += ["## Not checked", ""]
        for ids, reason, advice in report.skipped_groups():
            named = ", ".join(f"`{i}`" for i in ids)
            out.append(
                f"- {named}: {_escape(reason)}" + (f" ({_escape(advice)})" if advice else "")
            )
        out.append("")
    return "\n".join(out)


def _evidence(e: Evidence) -> str:
    line = evidence_line(e)
    parts = []
    if line.name:
        name = line.name.replace("`", "'")
        parts.append(f"`{name}`")
    parts.append(_escape(line.text))
    if line.where:
        parts.append(f"({line.where})")
    return " ".join(p for p in parts if p)


def _escape(text: str) -> str:
    """Keep table pipes, emphasis markers and C++ `<...>` in names from breaking the layout."""
    for char in "|*_<":
        text = text.replace(char, "\\" + char)
    return text
