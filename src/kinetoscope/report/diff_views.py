"""The diff report's sections for the views a run may lack: LLM passes, collectives,
mixture of experts, modules and the kernel view (each empty when neither run has
it); report/diff_sections.py places them among the always-present ones."""

from __future__ import annotations

from typing import Any

from ..formatting.escaping import inert
from ..formatting.units import fmt_change
from .diff_section_model import Section


def llm_sections(d) -> list[Section]:
    """Per-phase time, TTFT and TPOT of both runs (compare/llm_diff.py); none without LLM."""
    if not d.llm:
        return []
    text, rows = llm_lines(d.llm)
    return [Section("LLM phases (A -> B)", text=text, headers=LLM_HEADERS, rows=rows)]


def communication_sections(d) -> list[Section]:
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


def moe_sections(d) -> list[Section]:
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


def modules_sections(d, limit: int) -> list[Section]:
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


def kernel_view_sections(d, limit: int) -> list[Section]:
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
