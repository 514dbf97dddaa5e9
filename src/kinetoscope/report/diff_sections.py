"""A `TraceDiff` laid out as titled sections of text lines and table rows.

Every format of `diff` (report/diff_render.py: text, Markdown, HTML) shows these
same sections, built once by `sections()`; the figures come from compare/ (the
diff, its decomposition and conclusion), this module only words and rounds them.
"""

from __future__ import annotations

from pathlib import Path

from ..formatting.escaping import inert
from ..formatting.units import fmt_us
from .diff_section_model import Section
from .diff_views import (
    communication_sections,
    kernel_view_sections,
    llm_sections,
    modules_sections,
    moe_sections,
)

#: Rows per table in text/markdown/html; json carries every row.
ROW_LIMIT = 25
#: The HTML page draws the two runs' timelines after this section.
RUNS_TITLE = "Runs (A -> B)"


def _count(x: float) -> str:
    return f"{x:.0f}" if float(x).is_integer() else f"{x:.1f}"


def _delta(a: float, b: float) -> str:
    if a == b:
        return "="
    if a == 0:
        return "new"
    if b == 0:
        return "gone"
    pct = (b - a) / a * 100
    return "=" if abs(pct) < 0.5 else f"{pct:+.0f}%"


def _devices(names: list[str]) -> str:
    counts = {n: names.count(n) for n in names}
    return ", ".join(n if c == 1 else f"{c}x {n}" for n, c in counts.items()) or "none"


def _runs(d) -> Section:
    a, b = d.a, d.b
    rows = [
        ["trace", Path(a.path).name, Path(b.path).name, ""],
        ["device", _devices(a.devices), _devices(b.devices), ""],
        ["steps", str(a.steps), str(b.steps), ""],
        ["regime", a.regime or "-", b.regime or "-", ""],
    ]
    for label, x, y in [
        ("step time", a.step_time_us, b.step_time_us),
        ("host time", a.host_time_us, b.host_time_us),
        ("device busy", a.device_busy_us, b.device_busy_us),
    ]:
        rows.append([label + " (median/step)", fmt_us(x, 1), fmt_us(y, 1), _delta(x, y)])
    rows.append(
        [
            "device busy ratio",
            f"{a.device_busy_ratio:.1%}",
            f"{b.device_busy_ratio:.1%}",
            "",
        ]
    )
    for label, x, y in [
        ("kernels/step", a.kernels_per_step, b.kernels_per_step),
        ("launches/step", a.launches_per_step, b.launches_per_step),
    ]:
        rows.append([label, _count(x), _count(y), _delta(x, y)])
    return Section(RUNS_TITLE, headers=["", "A", "B", "change"], rows=rows)


def _environment(d) -> Section:
    sec = Section("Environment (what differs besides the program)")
    if not d.environment.differences:
        sec.text.append("No difference in devices, runtime versions, profiler settings or steps.")
        return sec
    sec.headers = ["", "A", "B"]
    sec.rows = [[r.field, r.a, r.b] for r in d.environment.differences]
    return sec


_STATUS_WORDS = {
    "none": "no change",
    "noise": "noise",
    "negligible": "< 1% of step",
    "gain": "gain",
    "loss": "loss",
    "unmeasured": "too few steps",
}


def _decomposition(d) -> Section:
    sec = Section("Where the step time goes (per step; each change judged over the steps)")
    sec.text.append(
        "Data wait, sync wait, (on a CPU run) compute, dispatch + launch and Python/other are "
        "the median step's and add up to it; device busy (median over steps) runs under them. "
        "Interval: 95% bootstrap interval of the difference of the per-step medians (B - A); "
        "noise where it holds zero. Spread: the larger of the two runs' max(IQR, p90 - median)."
    )
    sec.headers = ["part", "A", "B", "change", "95% interval", "spread", "reads as"]
    for c in d.decomposition:
        spread = "-" if c.noise_us is None else fmt_us(c.noise_us, 1)
        interval = "-" if c.low_us is None else f"{_sign(c.low_us)} to {_sign(c.high_us)}"
        sign = "+" if c.delta_us >= 0 else "-"
        sec.rows.append(
            [
                c.words,
                fmt_us(c.a_us, 1),
                fmt_us(c.b_us, 1),
                sign + fmt_us(abs(c.delta_us), 1),
                interval,
                spread,
                _STATUS_WORDS[c.status],
            ]
        )
    return sec


def _sign(us: float) -> str:
    return ("+" if us >= 0 else "-") + fmt_us(abs(us), 1)


def _types(d) -> Section:
    sec = Section("Device work by type (per step)")
    if not d.types:
        sec.text.append("No device work in either trace.")
        return sec
    if not d.kernels.comparable:
        sec.text.append("Kernels are not matched by name across vendors: no appeared/vanished.")
    sec.headers = ["type", "events A", "events B", "time A", "time B", "appeared", "vanished"]
    for t in d.types:
        sec.rows.append(
            [
                t.type,
                _count(t.events_a),
                _count(t.events_b),
                fmt_us(t.us_a, 1),
                fmt_us(t.us_b, 1),
                _count(t.appeared) if t.appeared else "",
                _count(t.vanished) if t.vanished else "",
            ]
        )
    return sec


def _steps(d, limit: int) -> Section:
    """One row per run and step, A above B: twelve side-by-side columns do not fit
    a 100-column terminal."""
    rows = []
    for pair in d.steps[:limit]:
        for run, s in (("A", pair.a), ("B", pair.b)):
            if s is None:
                rows.append([str(pair.position), run, "-", "-", "-", "-", "-", "-"])
                continue
            cells = [str(pair.position), run, s.label]
            times = (s.time_us, s.host_busy_us, s.device_busy_us)  # step time as diff's
            cells += [fmt_us(t, 1) for t in times]
            cells += [str(s.kernels), str(s.launches)]
            rows.append(cells)
    headers = ["#", "run", "step", "time", "host busy", "device busy", "kernels", "launches"]
    return Section(
        "Steps side by side", headers=headers, rows=rows, more=max(0, len(d.steps) - limit)
    )


def _kernel_name(r) -> str:
    if not r.replacement:
        return r.display
    return f"{r.display} -> {r.replacement}" + (f" ({r.change})" if r.change else "")


def _kernels(d, limit: int) -> Section:
    k = d.kernels
    sec = Section("Kernels (matched by name)")
    if not k.comparable:
        sec.text.append(k.reason + ".")
        sec.headers = ["kind / run", "kernel", "calls A", "calls B", "time/step A", "time/step B"]
        sec.headers.append("change")
        for r in k.by_kind:
            sec.rows.append(
                [
                    r.display,
                    "(all)",
                    _count(r.calls_a),
                    _count(r.calls_b),
                    fmt_us(r.us_a, 1),
                    fmt_us(r.us_b, 1),
                    _delta(r.us_a, r.us_b),
                ]
            )
        for run, rows in (("A", k.top_a), ("B", k.top_b)):
            for r in rows:
                a_cells = [_count(r.calls_a), "", fmt_us(r.us_a, 1), ""]
                b_cells = ["", _count(r.calls_b), "", fmt_us(r.us_b, 1)]
                sec.rows.append([f"top of {run}", r.display, *(a_cells if run == "A" else b_cells)])
                sec.rows[-1].append("")
        return sec
    if not k.rows:
        sec.text.append("No kernels in either trace.")
        return sec
    statuses = ("unchanged", "changed", "replaced", "new", "gone")
    counts = {s: len(k.by_status(s)) for s in statuses}
    sec.text.append(", ".join(f"{n} {s}" for s, n in counts.items()) + ".")
    order = {"replaced": 0, "changed": 1, "new": 2, "gone": 3, "unchanged": 4}
    rows = sorted(k.rows, key=lambda r: order[r.status])
    sec.headers = ["status", "kernel", "calls A", "calls B", "time/step A", "time/step B", "change"]
    for r in rows[:limit]:
        sec.rows.append(
            _change_row(r.status, _kernel_name(r), r.calls_a, r.calls_b, r.us_a, r.us_b)
        )
    sec.more = max(0, len(rows) - limit)
    return sec


def _change_row(status: str, name: str, calls_a, calls_b, us_a: float, us_b: float) -> list[str]:
    """status, name, calls and time per step on each side, and the change: the one row
    shape of the kernel and host-op tables, so both read (and round) alike."""
    return [
        status,
        name,
        _count(calls_a),
        _count(calls_b),
        fmt_us(us_a, 1),
        fmt_us(us_b, 1),
        _delta(us_a, us_b),
    ]


def _ops(d, limit: int) -> Section:
    moved = [r for r in d.ops if r.status != "unchanged"]
    sec = Section("Host ops that appeared, vanished or changed (self CPU per step)")
    if not moved:
        sec.text.append(f"The same {len(d.ops)} host ops with the same cost.")
        return sec
    sec.headers = ["status", "op", "calls A", "calls B", "self A", "self B", "change"]
    for r in moved[:limit]:
        sec.rows.append(
            _change_row(r.status, r.name, r.calls_a, r.calls_b, r.self_us_a, r.self_us_b)
        )
    sec.more = max(0, len(moved) - limit)
    return sec


def _findings(d) -> Section:
    sec = Section("Findings")
    if not d.findings:
        sec.text.append("No findings in either run.")
        return sec
    sec.headers = ["status", "id", "A", "B", "title"]
    for r in d.findings:
        sec.rows.append([r.status, r.id, r.severity_a or "-", r.severity_b or "-", r.title])
    return sec


def sections(d, limit: int = ROW_LIMIT) -> list[Section]:
    """Every section, its text and cells made `inert` (names from the traces, paths):
    the one place every format (text, Markdown, HTML) takes them from."""
    return [_inert(sec) for sec in _sections(d, limit)]


def _inert(sec: Section) -> Section:
    sec.text = [inert(line) for line in sec.text]
    sec.rows = [[inert(cell) for cell in row] for row in sec.rows]
    return sec


def _sections(d, limit: int) -> list[Section]:
    return [
        Section("Conclusion", text=[d.conclusion]),
        _environment(d),
        _runs(d),
        _decomposition(d),
        _steps(d, limit),
        _types(d),
        _kernels(d, limit),
        _ops(d, limit),
        *llm_sections(d),
        *communication_sections(d),
        *moe_sections(d),
        *modules_sections(d, limit),
        *kernel_view_sections(d, limit),
        _findings(d),
    ]


def more_line(sec: Section) -> str:
    """What stands under a table whose rows were cut to `ROW_LIMIT`."""
    return f"... {sec.more} more rows (--format json lists all)"
