"""The LLM section's lines and table cells, shared by the text and Markdown reports.

Both lay out the same numbers from `Report.llm` (pipeline.sections.llm_section): a
summary line (phases, what they were read from, time to first token, time per
output token), one row per phase (passes, tokens, wall, host and device time,
graph replays: `graphs`, the cudaGraphLaunch / hipGraphLaunch calls) and one row
per pass, with its split from the window account (device / Python / dispatch /
waits, `analysis.llm_split`) and its token count marked `~` where copies inferred it.
Cells are plain strings; each renderer escapes trace-provided text (labels) its own way.
"""

from __future__ import annotations

from typing import Any

from ..formatting.units import fmt_us

PHASE_COLUMNS = ("phase", "passes", "tokens", "wall", "host", "device busy", "graphs")
#: The pass table's split column: the window account inside the pass (llm_split).
SPLIT_COLUMN = "dev/py/disp/wait"
PASS_COLUMNS = (
    "pass",
    "phase",
    "tokens",
    "duration",
    "host",
    "device busy",
    SPLIT_COLUMN,
    "kernels",
    "graphs",
    "KV cache",
)
#: The account split's parts, in the order of the pass table's split column.
SPLIT_KEYS = ("device", "python", "dispatch", "waits")


def summary(llm: dict[str, Any]) -> list[str]:
    """Counts per phase and where they came from, TTFT, TPOT and the decode spread."""
    counts = ", ".join(f"{n} {phase}" for phase, n in llm["phases"].items() if n)
    engine = f" {llm['engine']}" if llm.get("engine") else ""
    parts = [f"{counts} (from{engine} {llm['source']})"]
    if llm["ttft_us"] is not None:
        parts.append(f"time to first token {fmt_us(llm['ttft_us'])}")
    if llm.get("tpot_us") is not None:
        lat = llm["decode_latency_us"]
        parts.append(
            f"time per output token {fmt_us(llm['tpot_us'])} mean "
            f"(median {fmt_us(lat['median'])}, p90 {fmt_us(lat['p90'])})"
        )
    return parts


def phases_from(llm: dict[str, Any]) -> str:
    """What the phases were read from; and, without ProfilerStep, that passes are steps."""
    line = f"Phases from {llm['phase_from']}."
    if llm.get("evidence"):
        line += f" A generation by: {llm['evidence']}."
    if not llm.get("has_profiler_steps", True):
        line += " The trace has no ProfilerStep: each pass below is one step of the window."
    if llm.get("dropped_passes"):
        line += (
            f" {llm['dropped_passes']} step(s) that launched no work are not passes "
            "(nor in TTFT or TPOT)."
        )
    copied = {p["tokens_from"] for p in llm["passes"] if _copied(p)}
    if copied:
        line += f" Tokens marked ~ are inferred from {', '.join(sorted(copied))}."
    return line


def _copied(p: dict[str, Any]) -> bool:
    return bool(p.get("tokens_from")) and p["tokens_from"].startswith("copies")


def tokens_cell(p: dict[str, Any]) -> str:
    if p["tokens"] is None:
        return "-"
    return f"~{p['tokens']}" if _copied(p) else str(p["tokens"])


def split_cell(p: dict[str, Any]) -> str:
    split = p.get("split_us") or {}
    return "/".join(fmt_us(split.get(k, 0.0)).replace(" ", "") for k in SPLIT_KEYS)


def phase_rows(llm: dict[str, Any]) -> list[list[str]]:
    rows = []
    for phase, t in llm.get("phase_totals", {}).items():
        rows.append(
            [
                phase,
                str(t["passes"]),
                "-" if t["tokens"] is None else str(t["tokens"]),
                fmt_us(t["wall_us"]),
                fmt_us(t["host_us"]),
                fmt_us(t["device_busy_us"]),
                str(t["graph_launches"]),
            ]
        )
    return rows


def pass_row(p: dict[str, Any]) -> list[str]:
    """One pass's cells, the label first (unescaped, for the renderer to escape)."""
    cache = []
    if p["kv_appends"]:
        cache.append(f"{p['kv_appends']} cat")
    if p["kv_writes"]:
        cache.append(f"{p['kv_writes']} writes")
    if p["dtod_copies"]:
        cache.append(f"{p['dtod_copies']} DtoD")
    return [
        p["label"],
        p["phase"],
        tokens_cell(p),
        fmt_us(p["dur_us"]),
        fmt_us(p["host_us"]),
        fmt_us(p["device_busy_us"]),
        split_cell(p),
        str(p["kernels"]),
        str(p["graph_launches"]),
        ", ".join(cache) or "-",
    ]
