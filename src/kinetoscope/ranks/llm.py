"""Passes of a generation lined up across the ranks of a tensor-parallel engine.

Tensor parallelism splits every layer across ranks, which all-reduce its output
before the next layer: every rank runs the same scheduled steps, in the same order,
so the k-th pass of one rank is the k-th pass of every other. A pass lasts as long
as its slowest rank (the others wait in the all-reduce), so per pass the spread of
durations across ranks and the rank that was slowest say where a step's time went.
Ranks whose pass counts or phases differ are not one engine's ranks (or the
profiler windows do not cover the same steps): said, and the common prefix compared.
"""

from __future__ import annotations

from collections import Counter
from statistics import median
from typing import Any

from .summary import RankSummary


def align_passes(ranks: dict[int, RankSummary]) -> dict[str, Any] | None:
    """Per pass index: the phase, each rank's duration, the slowest rank and the spread;
    None when no rank holds LLM passes."""
    having = {r: s.llm_passes for r, s in ranks.items() if s.llm_passes}
    if not having:
        return None
    counts = {r: len(p) for r, p in having.items()}
    n = min(counts.values())
    passes, disagree = [], []
    for k in range(n):
        phases = {having[r][k][0] for r in having}
        if len(phases) > 1:
            disagree.append(k + 1)
        durs = {str(r): having[r][k][2] for r in having}  # str keys: JSON objects
        slowest = max(durs, key=lambda r: durs[r])
        spread = durs[slowest] - min(durs.values())
        passes.append(
            {
                "pass": k + 1,
                "phase": "/".join(sorted(phases)),
                "dur_us": durs,
                "median_us": median(durs.values()),
                "slowest_rank": int(slowest) if spread > 0 else None,  # None: all equal
                "spread_us": spread,
                "graph_launches": {str(r): having[r][k][4] for r in having},
            }
        )
    slowest = Counter(p["slowest_rank"] for p in passes if p["slowest_rank"] is not None)
    return {
        "ranks": sorted(having),
        "pass_counts": {str(r): c for r, c in counts.items()},
        "aligned": n,
        "phases_disagree": disagree,
        "slowest_rank_counts": dict(sorted(slowest.items())),
        "passes": passes,
    }


def notes(aligned: dict[str, Any]) -> list[str]:
    """The sentences above the per-pass table: disagreements first, then the summary."""
    out = []
    counts = set(aligned["pass_counts"].values())
    if len(counts) > 1:
        out.append(
            f"Ranks hold different pass counts ({aligned['pass_counts']}): the first "
            f"{aligned['aligned']} are compared."
        )
    if aligned["phases_disagree"]:
        out.append(f"Phases differ across ranks at passes {aligned['phases_disagree']}.")
    line = (
        f"{aligned['aligned']} passes lined up by order across ranks "
        f"{', '.join(map(str, aligned['ranks']))}"
    )
    if aligned["slowest_rank_counts"]:
        rank, times = max(aligned["slowest_rank_counts"].items(), key=lambda kv: kv[1])
        line += (
            f"; rank {rank} is the slowest in {times} of them (each pass lasts as long "
            "as its slowest rank)"
        )
    return out + [line + "."]


def table(aligned: dict[str, Any]) -> tuple[list[str], list[list[str]]]:
    """(head, rows) of the per-pass table, as every format shows it."""
    head = ["pass", "phase", "median ms", "slowest rank", "its ms", "spread ms"]
    rows = [
        [
            str(p["pass"]),
            p["phase"],
            f"{p['median_us'] / 1e3:.2f}",
            "-" if p["slowest_rank"] is None else str(p["slowest_rank"]),
            f"{max(p['dur_us'].values()) / 1e3:.2f}",
            f"{p['spread_us'] / 1e3:.2f}",
        ]
        for p in aligned["passes"]
    ]
    return head, rows
