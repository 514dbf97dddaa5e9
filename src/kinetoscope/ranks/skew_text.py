"""The per-collective skew across ranks (ranks/skew.py) as sentences and a table, which
text, Markdown and HTML all show as written here: one wording in every format.
"""

from __future__ import annotations

from typing import Any

from ..formatting.units import fmt_us

#: per rank, the time in the compared calls: its spread, the ranks with the most and the
#: least, the rank whose call was shortest most often, and the arrival skew per call
HEAD = ["family", "kind", "calls", "per-rank min", "median", "max", "max/median",
        "most time", "least time", "shortest call (late)", "arrival skew median",
        "max"]  # fmt: skip


def _rank(rank: int | None, counts: dict[str, int] | None = None) -> str:
    if rank is None:  # a tie: each rank that had it, and how often
        return "tie " + ", ".join(f"{r} ({n})" for r, n in (counts or {}).items())
    return str(rank)


def table(skew: dict[str, Any]) -> tuple[list[str], list[list[str]]]:
    """(head, rows): per (family, kind), the per-rank time summed over the compared calls
    (min, median, max, max/median), the rank with the most (it waited most) and with the
    shortest call most often (the late arriver), and the arrival skew."""
    rows = []
    for row in skew["rows"]:
        if not row["compared"]:
            continue
        spread, arrival = row["per_rank_us"], row["arrival"]
        ratio = row["max_over_median"]
        rows.append(
            [
                row["family"],
                row["kind"],
                str(row["compared"]),
                fmt_us(spread["min"]),
                fmt_us(spread["median"]),
                fmt_us(spread["max"]),
                "-" if ratio is None else f"{ratio:.2f}",
                str(row["slowest_rank"]),
                str(row["fastest_rank"]),
                _rank(row["late_arriver"], row["shortest_counts"]),
                fmt_us(arrival["skew_us"]["median"]) if arrival else "-",
                fmt_us(arrival["skew_us"]["max"]) if arrival else "-",
            ]
        )
    return HEAD, rows


def notes(skew: dict[str, Any]) -> list[str]:
    """The sentences around the table: how calls are matched, what the durations mean,
    whether start times compare, what was left out, and each row's worst call."""
    out = [
        f"Collectives matched across ranks {', '.join(map(str, skew['ranks']))} by "
        f"{skew['matched_by']} (the n-th call of a kind in a step, within its process group "
        "where recorded); per rank, its time in the compared calls. A collective's kernel "
        "lasts until the last rank joins (nccl-tests, TraceLens): the rank with the "
        "SHORTEST call arrived last, the one the others waited for (the straggler); the "
        "longest waited most."
    ]
    clock = skew["clock"]
    if clock["comparable"]:
        out.append(f"Arrival skew (latest start minus earliest) reads {clock['why']}.")
    else:
        out.append(f"Arrival is not compared: {clock['why']}. Durations need no shared clock.")
    if skew["partial"]:
        out.append(
            f"Only {len(skew['ranks'])} of {skew['world_size']} ranks given: a rank not "
            "given may arrive later still."
        )
    for row in skew["rows"]:
        name = f"{row['family']} {row['kind']}"
        if row["unmatched_calls"]:
            out.append(
                f"{name}: {row['unmatched_calls']} calls not compared: held by one rank, or "
                "their count in a step differs across ranks."
            )
        if row["not_overlapping"]:
            out.append(
                f"{name}: {row['not_overlapping']} of {row['matched']} calls matched by order "
                "do not overlap in time across ranks, which one collective always does on a "
                "shared clock: they are not one collective (another process group or order) "
                "or the clocks differ there; left out."
            )
        if row["compared"]:
            out.append(_worst(name, row))
    return out


def _worst(name: str, row: dict[str, Any]) -> str:
    """The call whose durations spread most across ranks, and who arrived when."""
    w = row["worst"]
    durs = {int(r): d for r, d in w["dur_us"].items()}
    short, long = min(durs, key=durs.get), max(durs, key=durs.get)
    where = f"step {w['step']}, call {w['index']}" if w["step"] != -1 else f"call {w['index']}"
    line = (
        f"{name}, widest ({where}): {fmt_us(durs[short])} on rank {short} to "
        f"{fmt_us(durs[long])} on rank {long}"
    )
    if w["start_us"] is not None:
        starts = {int(r): t for r, t in w["start_us"].items()}
        last = max(starts, key=starts.get)
        line += f"; rank {last} started {fmt_us(starts[last])} after the first rank"
    return line + "."
