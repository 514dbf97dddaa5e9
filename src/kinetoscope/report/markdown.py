"""Markdown rendering of a `Report`, for pull requests, issues and notebooks.

Everything that comes from the trace (path, device and kernel names, labels,
versions, warnings) is escaped: `|` would split a table cell, backticks end a
code span, `<...>` in a C++ template name would be read as HTML, and control
characters or newlines would break the line they are on.
"""

from __future__ import annotations

from ..formatting.units import fmt_pct, fmt_us
from ..rules.base import Evidence
from . import comm_render, kernels_render, lines_render, llm_render, modules_render, moe_render
from .evidence import evidence_line, short_name
from .model import Report
from .phrases import account_line, device_cell, path_rows, step_counts, steps_line
from .run_text import run_line, versions_line
from .tables import markdown_table, md_cell, md_code


def render_markdown(report: Report) -> str:
    t, v = report.trace, report.verdict
    out = [f"# kinetoscope: {md_code(t.path)}", ""]
    names = {md_cell(str(d["name"])) for d in t.devices if d.get("name")}
    devices = ", ".join(sorted(names)) or "none listed"
    versions = md_cell(versions_line(t.versions)) or "not recorded"
    out += [
        f"- **Devices**: {devices}",
        f"- **Versions**: {versions}",
        f"- **Window**: {fmt_us(t.window['dur_us'])} from +{fmt_us(t.window['start_us'])}, "
        f"{step_counts(report)}, {t.events} events",
        *([f"- **Recorded by kinetoscope**: {md_cell(run_line(t.run))}"] if t.run else []),
        "",
        f"**Verdict: {md_cell(v.regime)}**: {md_cell(v.summary.split(': ', 1)[-1])}",
        "",
    ]
    out += _quality(report)
    out += _path(report)
    out += [
        "## Steps",
        "",
        "| step | starts at | duration | host busy | device busy | kernels | launches | |",
        "|---|---:|---:|---:|---:|---:|---:|---|",
    ]
    for row in report.steps:
        flag = f"outlier: {md_cell(row.outlier)}" if row.outlier else ""
        out.append(
            f"| {md_cell(row.label)} | +{fmt_us(row.start_us)} | {fmt_us(row.dur_us)} | "
            f"{fmt_us(row.host_busy_us)} | {device_cell(report, row)} | {row.kernels} | "
            f"{row.launches} | {flag} |"
        )
    out += [
        "",
        steps_line(report).capitalize() + ".",
        "",
    ]
    out += _kernel_types(report)
    out += _streams(report)
    out += _communication(report)
    out += _llm(report)
    out += _moe(report)
    out += modules_render.markdown_lines(report.modules) if report.modules else []
    out += _kernels(report)
    out += lines_render.markdown(report.lines)
    out += ["## Findings", ""]
    if not report.findings:
        out += ["No rule fired.", ""]
    per = "/step" if report.trace.window["steps"] else " over the trace"
    for number, f in enumerate(report.findings, 1):
        impact = f" (~{fmt_us(f.impact_us)}{per})" if f.impact_us > 0 else ""
        out += [
            f"### {number}. `{f.id}` [{f.severity}]{impact}",
            "",
            f"**{md_cell(f.title)}**",
            "",
            md_cell(f.explanation),
            "",
            f"*Try:* {md_cell(f.suggestion)}",
            "",
        ]
        out += [f"- {_evidence(e)}" for e in f.evidence]
        out.append("")
    if report.not_checked:
        out += ["## Not checked", ""]
        for ids, reason, advice in report.skipped_groups():
            named = ", ".join(f"`{i}`" for i in ids)
            out.append(
                f"- {named}: {md_cell(reason)}" + (f" ({md_cell(advice)})" if advice else "")
            )
        out.append("")
    return "\n".join(out)


def _quality(report: Report) -> list[str]:
    """The trust grade and its reasons, right under the verdict (whose line already holds
    the host-time split)."""
    q = report.quality
    if not q:
        return []
    lines = [f"**Trace quality: {md_cell(str(q.get('grade', 'unknown')))}**"]
    lines.append("")
    lines += [f"- {md_cell(reason)}" for reason in q.get("reasons", [])]
    return lines + ([""] if q.get("reasons") else [])


def _path(report: Report) -> list[str]:
    """The window account, then the critical path's largest parts (a table)."""
    rows = path_rows(report)
    if not rows:
        return []
    per = "per step" if report.trace.window.get("steps") else "over the window"
    out = ["## Critical path", "", f"Window account: {md_cell(account_line(report))}.", ""]
    return out + _table(
        ("share", "class", "held by", "time", "pieces", "first at", f"saves at most {per}"),
        [
            [
                f"{r['share'] * 100:.1f}%",
                md_cell(r["words"]),
                md_code(short_name(r["name"])),
                fmt_us(r["us"]),
                str(r["segments"]),
                "+" + fmt_us(r["first_us"]),
                fmt_us(r["saving_per_step_us"]),
            ]
            for r in rows
        ],
        left=3,
    )


def _kernel_types(report: Report) -> list[str]:
    kt = report.kernel_types
    if not kt or not kt.get("types"):
        return []
    per = "per step" if kt.get("steps") else "per trace"
    out = [
        "## Device time by kernel type",
        "",
        f"| type | events | total | {per} | share |",
        "|---|---:|---:|---:|---:|",
    ]
    for row in kt["types"]:
        out.append(
            f"| {md_cell(row['type'])} | {row['events']} | {fmt_us(row['total_us'])} | "
            f"{fmt_us(row['per_step_us'])} | {fmt_pct(row['share'])} |"
        )
    return out + [""]


def _streams(report: Report) -> list[str]:
    """Streams and communication overlap, where there is more than one stream or any
    communication (one stream and no collectives says nothing)."""
    sr = report.streams
    if not sr or not sr.get("streams"):
        return []
    if len(sr["streams"]) < 2 and not sr.get("communication_us"):
        return []
    out = ["## Device streams", ""]
    if sr.get("communication_us"):
        out += [
            f"Communication {fmt_us(sr['communication_us'])}: "
            f"{fmt_pct(sr['hidden_share'])} hidden under compute "
            f"({fmt_us(sr['hidden_us'])}), {fmt_us(sr['exposed_us'])} exposed.",
            "",
        ]
    out += ["| stream | device | events | busy | communication |", "|---|---:|---:|---:|---:|"]
    for s in sr["streams"]:
        out.append(
            f"| {md_cell(s['label'])} | {s['device']} | {s['events']} | {fmt_us(s['busy_us'])} | "
            f"{fmt_us(s['communication_us'])} |"
        )
    return out + [""]


def _communication(report: Report) -> list[str]:
    """Every collective by family and kind (report.comm_render: the text's cells)."""
    comm = report.communication
    if not comm:
        return []
    out = ["## Communication", ""]
    out += [f"- {md_cell(line)}" for line in comm_render.family_lines(comm)] + [""]
    rows = [[md_cell(c) for c in comm_render.row_cells(r)] for r in comm["collectives"]]
    out += _table(comm_render.COLUMNS, rows, left=2)
    return out + [md_cell(comm_render.NOTE), ""]


def _llm(report: Report) -> list[str]:
    """Passes of a generation (report.llm_render lays out the same cells as the text)."""
    llm = report.llm
    if not llm:
        return []
    out = ["## LLM phases", "", md_cell("; ".join(llm_render.summary(llm))) + ".", ""]
    out += [md_cell(llm_render.phases_from(llm)), ""]
    out += _table(llm_render.PHASE_COLUMNS, llm_render.phase_rows(llm), left=1)
    out += _table(llm_render.PASS_COLUMNS, [llm_render.pass_row(p) for p in llm["passes"]], left=2)
    return out


def _moe(report: Report) -> list[str]:
    """Mixture-of-experts parts and dispatch (report.moe_render: the text's cells)."""
    moe = report.moe
    if not moe:
        return []
    out = ["## Mixture of experts", ""]
    for line in moe_render.summary(moe):
        out += [md_cell(line), ""]
    out += _table(moe_render.PART_COLUMNS, moe_render.part_rows(moe), left=2)
    layers = moe["layers"]
    if layers:
        rows = [moe_render.layer_row(layer) for layer in layers[: moe_render.MAX_LAYERS]]
        out += _table(moe_render.LAYER_COLUMNS, rows, left=2)
        if len(layers) > moe_render.MAX_LAYERS:
            more = len(layers) - moe_render.MAX_LAYERS
            out += [f"... {more} more layers (see --format json).", ""]
    return out


def _kernels(report: Report) -> list[str]:
    """The kernel view (report.kernels_render: the text's cells)."""
    k = report.kernels
    if not k:
        return []
    out = ["## Kernels", ""]
    for line in kernels_render.summary(k):
        out += [md_cell(line), ""]
    out += _table(kernels_render.COLUMNS, kernels_render.rows(k, full=True), left=1)
    if kernels_render.more(k):
        out += [f"... {kernels_render.more(k)} more kernels (see --format json).", ""]
    return out


def _table(columns: tuple[str, ...], rows: list[list[str]], left: int) -> list[str]:
    """A Markdown table whose first `left` columns are text, then a blank line."""
    return markdown_table(columns, rows, left) + [""]


def _evidence(e: Evidence) -> str:
    line = evidence_line(e)
    parts = []
    if line.name:
        parts.append(md_code(line.name))
    parts.append(md_cell(line.text))
    if line.where:
        parts.append(f"({md_cell(line.where)})")
    return " ".join(p for p in parts if p)
