"""The LLM comparison of a diff: per-phase time, time to first token, time per output token.

Two runs of one generation (say eager and graph-replayed decode, or two engine
versions) differ per phase: a change can cut the decode loop and leave the prefill
alone. Runs can also hold different pass counts (more new tokens, another prompt
batch), so each phase is compared per pass (mean wall, host and device time of
one pass) beside its totals. Empty when neither run holds a generation.
"""

from __future__ import annotations

from typing import Any

from ..analysis.llm import LlmView, llm_view
from ..formatting.units import fmt_change
from ..trace import Trace


def llm_diff(trace_a: Trace, trace_b: Trace) -> dict[str, Any]:
    """Both runs' LLM figures side by side (JSON-ready); {} when neither has passes."""
    va, vb = llm_view(trace_a), llm_view(trace_b)
    if va is None and vb is None:
        return {}
    ta = va.totals() if va else {}
    tb = vb.totals() if vb else {}
    phases = []
    for phase in [p for p in ta if p in tb] + [p for p in (*ta, *tb) if (p in ta) != (p in tb)]:
        row: dict[str, Any] = {"phase": phase}
        for key, totals in (("a", ta), ("b", tb)):
            t = totals.get(phase)
            row[key] = (
                {
                    "passes": t.passes,
                    "tokens": t.tokens,
                    "wall_us": t.wall_us,
                    "per_pass_us": t.wall_us / t.passes,
                    "host_per_pass_us": t.host_us / t.passes,
                    "device_per_pass_us": t.device_busy_us / t.passes,
                    "graph_launches": t.graph_launches,
                }
                if t
                else None
            )
        phases.append(row)
    return {
        "a": _side(va),
        "b": _side(vb),
        "phases": phases,
        "ttft_us": {"a": va.ttft_us if va else None, "b": vb.ttft_us if vb else None},
        "tpot_us": {"a": va.tpot_us if va else None, "b": vb.tpot_us if vb else None},
    }


def _side(view: LlmView | None) -> dict[str, Any] | None:
    if view is None:
        return None
    return {"source": view.source, "phase_from": view.phase_from, "engine": view.engine}


def llm_sentence(llm: dict[str, Any]) -> str:
    """One sentence for the diff's conclusion: TTFT and TPOT where both runs have them."""
    if not llm:
        return ""
    parts = [
        f"{words} {fmt_change(pair['a'], pair['b'])}"
        for words, pair in (("time to first token", llm["ttft_us"]),
                            ("time per output token", llm["tpot_us"]))
        if pair["a"] is not None and pair["b"] is not None
    ]  # fmt: skip
    return f"Generation: {', '.join(parts)}." if parts else ""
