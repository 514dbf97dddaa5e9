"""Comparing rank summaries: who waits at collectives, who is the straggler, and
one merged entry per finding across ranks. Needs no common clock between ranks:
everything here reads durations and positions from `RankSummary`s.
"""

from __future__ import annotations

from statistics import median
from typing import Any

from ..rules.base import SEVERITY_ORDER
from ..rules.ranking import WINDOW_CAVEATS
from .summary import RankSummary

#: a straggler waits at collectives less than this share of the median rank's wait ...
STRAGGLER_WAIT_RATIO = 0.5
#: ... and that median wait is at least this share of the median step
MIN_WAIT_SHARE = 0.05


def collective_waits(ranks: dict[int, RankSummary]) -> tuple[dict[int, float], int]:
    """Per rank, time spent in collectives waiting for the last rank to arrive; and how
    many collectives were matched across ranks.

    A collective kernel cannot finish before every rank has joined, so the rank
    that arrives last runs the shortest kernel: the k-th collective's excess over
    its shortest instance is waiting. Needs no common clock between ranks.
    Collectives are matched by position while their names agree on every rank.
    """
    seqs = [s.collectives for s in ranks.values()]
    matched = 0
    for k in range(min((len(q) for q in seqs), default=0)):
        if len({q[k][0] for q in seqs}) != 1:
            break
        matched += 1
    waits = {}
    for rank, s in ranks.items():
        waits[rank] = sum(s.collectives[k][1] - min(q[k][1] for q in seqs) for k in range(matched))
    return waits, matched


def stragglers(ranks: dict[int, RankSummary]) -> list[int]:
    """Ranks the others wait for at collectives.

    A straggler waits less than STRAGGLER_WAIT_RATIO x the median rank's
    collective wait, while that median wait is at least MIN_WAIT_SHARE of the
    median step (otherwise nobody is really held back).
    """
    waits, matched = collective_waits(ranks)
    if not matched or len(ranks) < 2:
        return []
    typical_wait = median(waits.values())
    typical_step = median(s.step_us for s in ranks.values())
    if typical_wait < MIN_WAIT_SHARE * typical_step:
        return []
    return [r for r, w in waits.items() if w < STRAGGLER_WAIT_RATIO * typical_wait]


def merged_findings(ranks: dict[int, RankSummary]) -> list[dict[str, Any]]:
    """One entry per finding id: the ranks it fires on and its worst instance."""
    groups: dict[str, list[tuple[int, dict]]] = {}
    for rank, s in ranks.items():
        for f in s.findings:
            groups.setdefault(f["id"], []).append((rank, f))
    out = []
    for rule_id, members in groups.items():
        worst_rank, worst = max(members, key=lambda m: (m[1]["impact_us"], -m[0]))
        impacts = [f["impact_us"] for _, f in members]
        out.append(
            {
                "id": rule_id,
                "ranks": sorted({r for r, _ in members}),
                "severity": min(
                    (f["severity"] for _, f in members), key=lambda s: SEVERITY_ORDER[s]
                ),
                "title": worst["title"],
                "worst_rank": worst_rank,
                "impact_us": {"min": min(impacts), "max": max(impacts)},
                "suggestion": worst["suggestion"],
            }
        )
    # read in the order single-trace findings are (`rules.ranking`): window caveats first,
    # then the largest time a fix saves on any rank, severity breaking ties; every format
    # lists them in this order
    out.sort(
        key=lambda f: (
            f["id"] not in WINDOW_CAVEATS,
            -f["impact_us"]["max"],
            SEVERITY_ORDER[f["severity"]],
            f["id"],
        )
    )
    return out
