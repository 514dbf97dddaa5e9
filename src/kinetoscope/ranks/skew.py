"""Each collective compared across ranks: the spread of its durations, who arrived last.

Ranks run the same collectives in the same order (a collective is a rendezvous: a rank
that skips one hangs the job), so within one process group and one step, the n-th
all-reduce of each rank is one collective. Calls are matched on (family, kind, process
group where recorded, step, n); a step whose count of that collective differs across the
ranks holding it is left unmatched and counted. The definitions are TraceLens's
NcclAnalyser's (`build_df_nccl_implicit_sync_cat`, `build_df_straggler_summary`):

- A collective kernel spins until every rank of the group has joined (nccl-tests times
  it the same way), so its duration on a rank is its own transfer plus its wait for the
  last rank. The shortest duration is the collective's own time (TraceLens's
  `comm_latency`), and the rank that ran it is the one the others waited for: the late
  arriver. The rank with the longest duration arrived first and waited most.
- Arrival skew is the latest start minus the earliest (TraceLens's "skew in start time").
  It needs the ranks' clocks to agree: Kineto writes host wall-clock (epoch) times,
  shared by the ranks of one host and only NTP-close across hosts, and the trace does not
  say which host a rank ran on. A collective cannot end on any rank before its last rank
  has started, so a matched call whose earliest end precedes its latest start shows the
  clocks disagree (or the calls are not one collective): its arrival is not compared.
  Durations need no common clock and are always compared.

With fewer traces than the world size, the late arriver among them may not be the
job's: a rank not given can arrive later still. Said.
"""

from __future__ import annotations

from collections import Counter
from statistics import median
from typing import Any

from .summary import RankSummary


def collective_skew(ranks: dict[int, RankSummary]) -> dict[str, Any] | None:
    """Per (family, kind): matched calls and their spread across ranks; None when fewer
    than two ranks hold collectives."""
    holding = {r: s for r, s in ranks.items() if s.calls}
    if len(holding) < 2:
        return None
    by_step = _step_keys(holding)
    instances: dict[tuple, dict[int, tuple[float, float]]] = {}
    counts: dict[tuple, dict[int, int]] = {}
    for r, s in holding.items():
        seen: Counter = Counter()
        for family, kind, group, step, start, dur in s.calls:
            head = (family, kind, group, by_step[r].get(step, step))
            instances.setdefault((*head, seen[head]), {})[r] = (start, dur)
            seen[head] += 1
        for head, n in seen.items():
            counts.setdefault(head, {})[r] = n
    clock = _clock(holding)
    rows: dict[tuple[str, str], dict[str, Any]] = {}
    for key, per_rank in instances.items():
        family, kind, group, step, _ = key
        row = rows.setdefault((family, kind), _new_row(family, kind))
        holders = counts[(family, kind, group, step)]
        row["ranks"] |= set(holders)
        if len(holders) < 2 or len(set(holders.values())) > 1:
            row["unmatched_calls"] += len(per_rank)
            continue
        row["instances"].append(_instance(key, per_rank))
    every = [i for row in rows.values() for i in row["instances"]]
    if clock["comparable"] and every and not any(i["overlap"] for i in every):
        clock = {
            "comparable": False,
            "why": "no matched collective overlaps in time across the ranks, which one "
            "collective always does on a shared clock: the ranks' clocks differ "
            "(traces from different hosts)",
        }
    out = [_finish(row, clock["comparable"]) for row in rows.values()]
    out.sort(key=lambda row: -row["per_rank_us"]["max"] if row["compared"] else 0.0)
    world = {s.world_size for s in holding.values()} - {None}
    size = world.pop() if len(world) == 1 else None
    return {
        "ranks": sorted(holding),
        "world_size": size,
        "partial": size is not None and len(holding) < size,
        "matched_by": by_step["how"],
        "clock": clock,
        "rows": out,
    }


def _step_keys(ranks: dict[int, RankSummary]) -> dict:
    """Per rank, step number -> the key its calls match on: the number itself when every
    rank profiled the same steps, else the step's position in the rank's window."""
    numbers = {r: sorted({c[3] for c in s.calls}) for r, s in ranks.items()}
    same = len({tuple(n) for n in numbers.values()}) == 1
    keys: dict[Any, Any] = {
        r: {n: (n if same else k) for k, n in enumerate(v)} for r, v in numbers.items()
    }
    no_steps = all(v == [-1] for v in numbers.values())
    keys["how"] = "window order" if no_steps else "step number" if same else "step order"
    return keys


def _clock(ranks: dict[int, RankSummary]) -> dict[str, Any]:
    """Whether start times can be compared across ranks at all (the per-call check is
    `_add`'s): every file on one clock basis (all write baseTimeNanoseconds, or none)."""
    based = {s.has_base_time for s in ranks.values()}
    if len(based) > 1:
        return {
            "comparable": False,
            "why": "some traces write baseTimeNanoseconds and others do not: their times "
            "count from different origins",
        }
    return {
        "comparable": True,
        "why": "host wall-clock times (epoch"
        + (", from each file's baseTimeNanoseconds" if based.pop() else "")
        + "): one clock for ranks on one host, only as close as NTP keeps hosts apart; "
        "the trace does not say which host a rank ran on",
    }


def _new_row(family: str, kind: str) -> dict[str, Any]:
    return {
        "family": family,
        "kind": kind,
        "ranks": set(),
        "unmatched_calls": 0,
        "instances": [],
    }


def _instance(key: tuple, per_rank: dict[int, tuple[float, float]]) -> dict[str, Any]:
    """One matched collective: per rank its start and duration, and whether the calls
    overlap in time (a collective ends on every rank after its last rank started)."""
    starts = {r: t for r, (t, _) in per_rank.items()}
    ends = {r: t + d for r, (t, d) in per_rank.items()}
    return {
        "step": key[3],
        "index": key[4] + 1,
        "dur_us": {r: d for r, (_, d) in per_rank.items()},
        "start": starts,
        "end_skew_us": max(ends.values()) - min(ends.values()),
        "overlap": min(ends.values()) >= max(starts.values()),
    }


def _argmin(values: dict[int, float]) -> int:
    return min(values, key=lambda r: (values[r], r))


def _argmax(values: dict[int, float]) -> int:
    return max(values, key=lambda r: (values[r], -r))


def _spread(values: list[float]) -> dict[str, float]:
    return {"min": min(values), "median": median(values), "max": max(values)}


def _top(counts: Counter) -> int | None:
    """The rank counted most; None on a tie (no one rank stands out)."""
    ranked = counts.most_common(2)
    return None if len(ranked) > 1 and ranked[0][1] == ranked[1][1] else ranked[0][0]


def _finish(row: dict, timed: bool) -> dict[str, Any]:
    """The row's figures over its compared collectives (JSON-ready, str rank keys). On a
    shared clock only calls that overlap in time are compared: the others are not one
    collective (another process group, another order) or the clocks differ there."""
    insts = row.pop("instances")
    row["ranks"] = sorted(row["ranks"])
    row["matched"] = len(insts)
    if timed:
        insts = [i for i in insts if i["overlap"]]
    row["not_overlapping"] = row["matched"] - len(insts)
    row["compared"] = len(insts)
    if not insts:
        return row
    totals: Counter = Counter()
    for inst in insts:
        totals.update(inst["dur_us"])
    per_rank = {r: totals[r] for r in sorted(totals)}
    typical = median(per_rank.values())
    row["per_rank_us"] = _spread(list(per_rank.values()))
    row["per_rank_total_us"] = {str(r): t for r, t in per_rank.items()}
    row["max_over_median"] = max(per_rank.values()) / typical if typical > 0 else None
    row["slowest_rank"], row["fastest_rank"] = _argmax(per_rank), _argmin(per_rank)
    row["own_time_us"] = sum(min(i["dur_us"].values()) for i in insts)  # comm_latency
    shortest = Counter(_argmin(i["dur_us"]) for i in insts)
    row["shortest_counts"] = {str(r): n for r, n in sorted(shortest.items())}
    row["late_arriver"] = _top(shortest)
    row["arrival"] = None
    if timed:
        skews = [max(i["start"].values()) - min(i["start"].values()) for i in insts]
        last = Counter(_argmax(i["start"]) for i in insts)
        row["arrival"] = {
            "skew_us": _spread(skews),
            "last_counts": {str(r): n for r, n in sorted(last.items())},
            "last_rank": _top(last),
            "end_skew_max_us": max(i["end_skew_us"] for i in insts),
        }
    worst = max(insts, key=lambda i: max(i["dur_us"].values()) - min(i["dur_us"].values()))
    first = min(worst["start"].values())
    row["worst"] = {
        "step": worst["step"],
        "index": worst["index"],
        "dur_us": {str(r): d for r, d in sorted(worst["dur_us"].items())},
        "start_us": {str(r): t - first for r, t in sorted(worst["start"].items())}
        if timed
        else None,
    }
    return row
