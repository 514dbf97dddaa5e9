"""The multi-rank report: the comparison across ranks computed once; JSON here, text and
markdown in report/ranks_render.py, HTML in report/html.py.
"""

from __future__ import annotations

from statistics import median
from typing import Any

from ..files.own_files import signature
from ..formatting.units import fmt_us
from . import skew_text
from .compare import (
    MIN_WAIT_SHARE,
    STRAGGLER_WAIT_RATIO,
    collective_waits,
    merged_findings,
    stragglers,
)
from .llm import align_passes, notes, table
from .skew import collective_skew
from .summary import RankSummary


class MultiRankReport:
    """The comparison across ranks, computed once (rendered by report/ranks_render.py)."""

    def __init__(self, ranks: dict[int, RankSummary]) -> None:
        self.ranks = ranks
        self.waits, self.matched = collective_waits(ranks)
        self.stragglers = stragglers(ranks)
        self.findings = merged_findings(ranks)
        self.median_step = median(s.step_us for s in ranks.values())
        self.median_wait = median(self.waits.values()) if self.waits else 0.0
        self.llm_passes = align_passes(ranks)  # ranks/llm.py: None without LLM passes
        #: the sentences above the lined-up passes and that table's (head, rows), as every
        #: format shows them (None without LLM passes)
        self.llm_notes = notes(self.llm_passes) if self.llm_passes else None
        self.llm_table = table(self.llm_passes) if self.llm_passes else None
        #: each collective compared across ranks (ranks/skew.py; None under two ranks with
        #: collectives), and its sentences and table as every format shows them
        self.collective_skew = collective_skew(ranks)
        self.skew_notes = skew_text.notes(self.collective_skew) if self.collective_skew else None
        self.skew_table = skew_text.table(self.collective_skew) if self.collective_skew else None

    def straggler_text(self) -> str:
        if not self.matched:
            return "No straggler analysis: no collective kernels matched across ranks."
        if not self.stragglers:
            return (
                f"No straggler: the median rank waits {fmt_us(self.median_wait)} at "
                f"{self.matched} collectives, and no rank waits under "
                f"{STRAGGLER_WAIT_RATIO:g}x that."
            )
        others = [w for r, w in self.waits.items() if r not in self.stragglers]
        described = ", ".join(
            f"rank {r} (waits {fmt_us(self.waits[r])} at collectives, step "
            f"{fmt_us(self.ranks[r].step_us)}, "
            f"compute {fmt_us(self.ranks[r].compute_us)})"
            for r in self.stragglers
        )
        return (
            f"Straggler{'s' if len(self.stragglers) > 1 else ''}: {described}. The other ranks "
            f"wait a median {fmt_us(median(others))} (up to {fmt_us(max(others))}) "
            f"in the same {self.matched} collectives for it to arrive: their collective kernels "
            "last longer because they start before it joins. Look at what this rank does "
            "before the collectives (data, host work, a slower device)."
        )

    def as_json(self) -> dict[str, Any]:
        return {
            **signature("ranks"),  # `explain DIR` knows the file as ours (own_files)
            "ranks": [
                {
                    "rank": r,
                    "path": s.path,
                    "step_us": round(s.step_us, 3),
                    "steps": [{"step": n, "dur_us": round(d, 3)} for n, d in s.steps],
                    "device_busy_us": round(s.device_busy_us, 3),
                    "compute_us": round(s.compute_us, 3),
                    "collective_us": round(s.collective_us, 3),
                    "collective_share": round(s.collective_share, 4),
                    "collective_kernels": s.collective_kernels,
                    "collective_wait_us": round(self.waits.get(r, 0.0), 3),
                    "overlap": round(s.overlap, 4) if s.overlap is not None else None,
                    "exposed_communication_us": round(s.exposed_us, 3),
                    "findings": s.findings,
                    "not_checked": s.not_checked,
                }
                for r, s in self.ranks.items()
            ],
            "median_step_us": round(self.median_step, 3),
            "matched_collectives": self.matched,
            "median_collective_wait_us": round(self.median_wait, 3),
            "stragglers": [
                {
                    "rank": r,
                    "collective_wait_us": round(self.waits[r], 3),
                    "step_us": round(self.ranks[r].step_us, 3),
                }
                for r in self.stragglers
            ],
            "thresholds": {
                "straggler_wait_ratio": STRAGGLER_WAIT_RATIO,
                "min_wait_share": MIN_WAIT_SHARE,
            },
            "findings": self.findings,
            "llm_passes": self.llm_passes,
            "collective_skew": self.collective_skew,
        }
