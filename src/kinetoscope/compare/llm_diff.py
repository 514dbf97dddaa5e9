"""The LLM comparison of a diff: per-phase time, time to first token, time per output token.

Two runs of one generation (say eager and graph-replayed decode, or two engine
versions, or two accelerators) differ per phase: a change can cut the decode loop and
leave the prefill alone. Runs can also hold different pass counts (more new tokens,
another prompt batch), so each phase is compared per pass (mean wall, host and device
time of one pass) beside its totals. Passes, not windows: a window also holds the
profiler's teardown and the idle time around the generation, which the passes leave
out (`analysis.llm`: a pass is an engine step or forward that launched work).

Where a phase's pass got slower (or faster), the device time per pass says on which
side. The change in a pass's wall time splits into three parts that add up to it:
the change in compute kernels' time, in communication kernels' time (a kernel whose
type, `analysis.kernel_types`, is "communication": all-reduce, all-gather, peer
copies), and the rest, which the device did not account for and the host did
(dispatch, Python, waits). The part that moved most with the change names the side:
a device-bound pass's wall follows its kernels, a host-bound one's does not. Empty
when neither run holds a generation.
"""

from __future__ import annotations

from typing import Any

from ..analysis.llm import LlmView, PhaseTotals, llm_view
from ..formatting.units import fmt_change, fmt_us
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
            row[key] = _per_pass(t) if t else None
        row["side"] = _side_of(row["a"], row["b"]) if row["a"] and row["b"] else None
        if row["side"]:
            row["side"]["sentence"] = side_sentence(row)
        phases.append(row)
    return {
        "a": _run(va),
        "b": _run(vb),
        "phases": phases,
        "ttft_us": {"a": va.ttft_us if va else None, "b": vb.ttft_us if vb else None},
        "tpot_us": {"a": va.tpot_us if va else None, "b": vb.tpot_us if vb else None},
    }


def _per_pass(t: PhaseTotals) -> dict[str, Any]:
    n = t.passes
    return {
        "passes": n,
        "tokens": t.tokens,
        "wall_us": t.wall_us,
        "per_pass_us": t.wall_us / n,
        "host_per_pass_us": t.host_us / n,
        "device_per_pass_us": t.device_busy_us / n,
        "compute_per_pass_us": t.compute_busy_us / n,
        "comm_per_pass_us": t.comm_busy_us / n,
        "graph_launches": t.graph_launches,
    }


def _side_of(a: dict[str, Any], b: dict[str, Any]) -> dict[str, Any] | None:
    """Which side a phase's per-pass change lies on (module docstring); None when the
    pass did not change."""
    wall = b["per_pass_us"] - a["per_pass_us"]
    if wall == 0 or a["per_pass_us"] <= 0:
        return None
    compute = b["compute_per_pass_us"] - a["compute_per_pass_us"]
    comm = b["comm_per_pass_us"] - a["comm_per_pass_us"]
    parts = {"device compute": compute, "communication": comm, "host": wall - compute - comm}
    # the part that moved with the pass, and most
    side = max(parts, key=lambda k: parts[k] * (1 if wall > 0 else -1))
    return {
        "side": side,
        "ratio": b["per_pass_us"] / a["per_pass_us"],
        "change_us": wall,
        "parts_us": parts,
    }


def _run(view: LlmView | None) -> dict[str, Any] | None:
    if view is None:
        return None
    return {"source": view.source, "phase_from": view.phase_from, "engine": view.engine}


def side_sentence(row: dict[str, Any]) -> str:
    """`decode: 19.0 ms -> 45.2 ms per pass (2.38x); compute kernels 15.7 ms -> 14.0 ms,
    communication 1.0 ms -> 1.3 ms per pass: the slowdown is on the host.`"""
    side, a, b = row["side"], row["a"], row["b"]
    if not side:
        return ""
    words = "slowdown" if side["change_us"] > 0 else "speed-up"
    comm = (
        f", communication {fmt_us(a['comm_per_pass_us'])} -> {fmt_us(b['comm_per_pass_us'])}"
        if a["comm_per_pass_us"] or b["comm_per_pass_us"]
        else ""
    )
    where = {"host": "on the host", "communication": "in communication"}.get(
        side["side"], "on the device (compute kernels)"
    )
    return (
        f"{row['phase']}: {fmt_us(a['per_pass_us'])} -> {fmt_us(b['per_pass_us'])} per pass "
        f"({side['ratio']:.2f}x); kernel time without communication "
        f"{fmt_us(a['compute_per_pass_us'])} -> {fmt_us(b['compute_per_pass_us'])}{comm} per "
        f"pass: the {words} is {where}."
    )


def llm_sentence(llm: dict[str, Any]) -> str:
    """The diff conclusion's sentence: TTFT and TPOT where both runs have them, and on
    which side each phase's per-pass change lies (passes, not windows)."""
    if not llm:
        return ""
    parts = [
        f"{words} {fmt_change(pair['a'], pair['b'])}"
        for words, pair in (("time to first token", llm["ttft_us"]),
                            ("time per output token", llm["tpot_us"]))
        if pair["a"] is not None and pair["b"] is not None
    ]  # fmt: skip
    out = f"Generation: {', '.join(parts)}." if parts else ""
    sides = [row["side"]["sentence"] for row in llm["phases"] if row.get("side")]
    if sides:
        out += (" " if out else "") + "Over the passes (teardown excluded): " + " ".join(sides)
    return out
