"""A `TraceDiff` laid out as titled sections of text lines and table rows.

Every format of `diff` (report/diff_render.py: text, Markdown, HTML) shows these
same sections, built once by `sections()`; the figures come from compare/ (the
diff, its decomposition and conclusion), this module only words and rounds them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..formatting.escaping import inert
from ..formatting.units import fmt_change, fmt_us

#: Rows per table in text/markdown/html; json carries every row.
ROW_LIMIT = 25
#: The HTML page draws the two runs' timelines after this section.
RUNS_TITLE = "Runs (A -> B)"


@dataclass
class Section:
    title: str
    text: list[str] = field(default_factory=list)
    headers: list[str] = field(default_factory=list)
    rows: list[list[str]] = field(default_factory=list)
    more: int = 0  # rows left out


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
        *_llm(d),
        *_communication(d),
        *_moe(d),
        *_modules(d, limit),
        *_kernel_view(d, limit),
        _findings(d),
    ]


def _llm(d) -> list[Section]:
    """Per-phase time, TTFT and TPOT of both runs (compare/llm_diff.py); none without LLM."""
    if not d.llm:
        return []
    text, rows = llm_lines(d.llm)
    return [Section("LLM phases (A -> B)", text=text, headers=LLM_HEADERS, rows=rows)]


def _communication(d) -> list[Section]:
    """Per collective family: time per step, exposed time and bus bandwidth of both runs
    (compare/comm_diff.py); none without collectives."""
    if not d.communication:
        return []
    rows = []
    for f in d.communication["families"]:
        a, b = f["a"] or {}, f["b"] or {}
        rows.append(
            [
                inert(f["family"]),
                str(a.get("calls", 0)),
                str(b.get("calls", 0)),
                fmt_change(a.get("per_step_us"), b.get("per_step_us")),
                fmt_change(a.get("exposed_us"), b.get("exposed_us")),
                _bandwidth(a.get("busbw_gbps"), b.get("busbw_gbps")),
            ]
        )
    text = ["time per step, exposed time and bus bandwidth of each collective family"]
    return [Section("Communication (A -> B)", text=text, headers=COMM_HEADERS, rows=rows)]


COMM_HEADERS = ["family", "calls A", "calls B", "per step", "exposed", "bus bandwidth"]


def _bandwidth(a: float | None, b: float | None) -> str:
    def one(v: float | None) -> str:
        return "-" if v is None else f"{v:.3g} GB/s"

    return f"{one(a)} -> {one(b)}"


LLM_HEADERS = [
    "phase",
    "passes A",
    "passes B",
    "per pass",
    "host per pass",
    "device per pass",
    "compute kernels per pass",
    "communication per pass",
    "change on",
]


def llm_lines(llm: dict[str, Any]) -> tuple[list[str], list[list[str]]]:
    """The diff section's text lines and its per-phase rows."""
    text = []
    for side in ("a", "b"):
        s = llm[side]
        where = f"{s['engine'] + ' ' if s['engine'] else ''}{s['source']}" if s else None
        text.append(f"{side.upper()}: " + (f"passes from {where}" if s else "no generation"))
    ttft, tpot = llm["ttft_us"], llm["tpot_us"]
    if ttft["a"] is not None or ttft["b"] is not None:
        text.append(f"time to first token {fmt_change(ttft['a'], ttft['b'])}")
    if tpot["a"] is not None or tpot["b"] is not None:
        text.append(f"time per output token {fmt_change(tpot['a'], tpot['b'])}")
    text += [row["side"]["sentence"] for row in llm["phases"] if row.get("side")]
    rows = []
    for row in llm["phases"]:
        a, b = row["a"] or {}, row["b"] or {}
        rows.append(
            [
                row["phase"],
                str(a.get("passes", 0)),
                str(b.get("passes", 0)),
                fmt_change(a.get("per_pass_us"), b.get("per_pass_us")),
                fmt_change(a.get("host_per_pass_us"), b.get("host_per_pass_us")),
                fmt_change(a.get("device_per_pass_us"), b.get("device_per_pass_us")),
                fmt_change(a.get("compute_per_pass_us"), b.get("compute_per_pass_us")),
                fmt_change(a.get("comm_per_pass_us"), b.get("comm_per_pass_us")),
                (row.get("side") or {}).get("side", "-"),
            ]
        )
    return text, rows


def _moe(d) -> list[Section]:
    """Each MoE part's time per step in both runs (compare/moe_diff.py); none without MoE."""
    if not d.moe:
        return []
    text = []
    for side in ("a", "b"):
        s = d.moe[side]
        if s is None:
            text.append(f"{side.upper()}: no MoE")
            continue
        worst = f", busiest expert {s['max_imbalance']:.2f}x the mean" if s["max_imbalance"] else ""
        text.append(f"{side.upper()}: dispatch {s['dispatch'] or 'not determined'}{worst}")
    rows = []
    for row in d.moe["parts"]:
        a, b = row["a"] or {}, row["b"] or {}
        rows.append(
            [
                row["part"],
                fmt_change(a.get("device_per_step_us"), b.get("device_per_step_us")),
                fmt_change(a.get("host_per_step_us"), b.get("host_per_step_us")),
            ]
        )
    headers = ["part", "device per step", "host per step"]
    return [Section("Mixture of experts (A -> B)", text=text, headers=headers, rows=rows)]


def _modules(d, limit: int) -> list[Section]:
    """Each module path's time per step in both runs, largest change first
    (compare/modules_diff.py); none when neither run has module ranges."""
    if not d.modules:
        return []
    text = [
        f"{side}: no module ranges (record with with_stack=True or with_modules=True)"
        for side in ("A", "B")
        if not d.modules[f"{side.lower()}_has_modules"]
    ]
    rows = []
    for row in d.modules["modules"][:limit]:
        a, b = row["a"] or {}, row["b"] or {}
        rows.append(
            [
                row["kind"],
                row["path"],
                fmt_change(a.get("device_per_step_us"), b.get("device_per_step_us")),
                fmt_change(a.get("host_per_step_us"), b.get("host_per_step_us")),
            ]
        )
    headers = ["kind", "module", "device per step", "host per step"]
    more = max(0, len(d.modules["modules"]) - limit)
    return [Section("Modules (A -> B)", text=text, headers=headers, rows=rows, more=more)]


def _kernel_view(d, limit: int) -> list[Section]:
    """Tensor Core share and estimated occupancy in both runs, then per kernel both ran
    (compare/kernel_view_diff.py); none without kernels."""
    kv = d.kernel_view
    if not kv:
        return []
    a, b = kv["a"] or {}, kv["b"] or {}

    def pct(x: float | None) -> str:
        return f"{x * 100:.1f}%" if x is not None else "-"

    text = [
        "Tensor Cores (estimate from kernel names): "
        f"{pct(a.get('tensor_core_share'))} -> {pct(b.get('tensor_core_share'))} of kernel time",
        "Estimated achieved occupancy, weighted by time: "
        f"{pct(a.get('est_achieved_occupancy'))} -> {pct(b.get('est_achieved_occupancy'))}",
    ]
    if a.get("fp32_without_tf32_us") is not None or b.get("fp32_without_tf32_us") is not None:
        text.append(
            "fp32 GEMM/conv without TF32: "
            + fmt_change(a.get("fp32_without_tf32_us"), b.get("fp32_without_tf32_us"))
        )
    rows = [
        [
            k["name"][:60],
            fmt_change(k["total_us"]["a"], k["total_us"]["b"]),
            f"{pct(k['est_achieved_occupancy']['a'])} -> {pct(k['est_achieved_occupancy']['b'])}",
            {True: "yes", False: "no", None: "?"}[k["tensor_cores"]],
        ]
        for k in kv["kernels"]
    ]
    headers = ["kernel (in both runs)", "total", "est. occupancy", "Tensor Cores"]
    sec = Section("Kernel view (A -> B)", text=text, headers=headers, rows=rows[:limit])
    sec.more = max(0, len(rows) - limit)
    return [sec]


def more_line(sec: Section) -> str:
    """What stands under a table whose rows were cut to `ROW_LIMIT`."""
    return f"... {sec.more} more rows (--format json lists all)"
