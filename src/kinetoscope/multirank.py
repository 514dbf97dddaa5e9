"""One distributed job, one trace per rank: who is slow, and how well comms hide.

`explain_ranks` loads the rank traces in parallel (a process pool, or a Dask or
Ray cluster: `executors.py`; each worker
loads its trace, measures it and runs the rules, and sends back only small
picklable summaries), then compares ranks: step times and the straggler(s),
the share of device time in collective kernels (NCCL/RCCL), and how much of
that collective time is overlapped by compute kernels on other streams. The
per-rank findings are merged across ranks ("ranks 0-7: ...").

The rank comes from the trace's `distributedInfo.rank`, else from the file name
(`worker3_...`, `rank_3...`), else from the file's position in the sorted list.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from statistics import median
from typing import Any

import numpy as np

from .analysis.intervals import merge, union_length
from .analysis.streams import stream_report
from .errors import TraceError, UsageError
from .executors import run_each
from .jsontext import dumps
from .own_files import signature
from .rules.base import SEVERITY_ORDER
from .trace import Trace, load

COLLECTIVE_RE = re.compile(r"nccl|rccl", re.IGNORECASE)
RANK_IN_NAME = re.compile(r"(?:rank|worker)[_\-.]?(\d+)", re.IGNORECASE)
TRACE_SUFFIXES = (".json", ".json.gz")
#: a straggler waits at collectives less than this share of the median rank's wait ...
STRAGGLER_WAIT_RATIO = 0.5
#: ... and that median wait is at least this share of the median step
MIN_WAIT_SHARE = 0.05


@dataclass
class RankSummary:
    """What one worker process sends back: numbers and finding dicts, no arrays."""

    path: str
    rank: int | None  # from distributedInfo; None when the trace has none
    steps: list[tuple[int, float]]  # (ProfilerStep number, duration us)
    window_us: float
    device_busy_us: float
    collective_us: float  # union of collective kernel time
    compute_us: float  # union of non-collective kernel time
    overlapped_us: float  # collective time covered by compute kernels on other streams
    collective_kernels: int
    collectives: list[tuple[str, float]] = field(default_factory=list)  # (name, dur) in order
    findings: list[dict[str, Any]] = field(default_factory=list)
    not_checked: list[dict[str, str]] = field(default_factory=list)
    error: str | None = None
    #: median over steps of communication no compute overlapped (analysis.streams)
    exposed_us: float = 0.0

    @property
    def step_us(self) -> float:
        """Median step duration (the whole window when no steps were recorded)."""
        return median(d for _, d in self.steps) if self.steps else self.window_us

    @property
    def collective_share(self) -> float:
        return self.collective_us / self.device_busy_us if self.device_busy_us > 0 else 0.0

    @property
    def overlap(self) -> float | None:
        return self.overlapped_us / self.collective_us if self.collective_us > 0 else None


def collective_overlap(trace: Trace) -> tuple[float, float, float, int]:
    """(collective us, compute us, collective us overlapped by compute on other streams, count)."""
    kernels = trace.kernels
    names = np.array([bool(COLLECTIVE_RE.search(n)) for n in trace.names] or [False])
    is_coll = names[trace.name_id[kernels]]
    coll, comp = kernels[is_coll], kernels[~is_coll]
    overlapped = 0.0
    for lane in np.unique(trace.lane[coll]):
        mine = coll[trace.lane[coll] == lane]
        others = comp[trace.lane[comp] != lane]
        cs, ce = merge(trace.ts[mine], trace.end[mine])
        ks, ke = merge(trace.ts[others], trace.end[others])
        overlapped += _intersection(cs, ce, ks, ke)
    return (
        union_length(trace.ts[coll], trace.end[coll]),
        union_length(trace.ts[comp], trace.end[comp]),
        overlapped,
        int(len(coll)),
    )


def collective_sequence(trace: Trace) -> list[tuple[str, float]]:
    """Collective kernels in launch order: the k-th on every rank is the same collective."""
    coll = [int(i) for i in trace.kernels if COLLECTIVE_RE.search(trace.name(i))]
    return [(trace.name(i), float(trace.dur[i])) for i in coll]


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


def _intersection(a_s, a_e, b_s, b_e) -> float:
    """Total length of the intersection of two sorted disjoint interval lists."""
    total, i, j = 0.0, 0, 0
    while i < len(a_s) and j < len(b_s):
        lo, hi = max(a_s[i], b_s[j]), min(a_e[i], b_e[j])
        if hi > lo:
            total += hi - lo
        if a_e[i] < b_e[j]:
            i += 1
        else:
            j += 1
    return float(total)


def summarize_rank(path: str, config: dict | None = None) -> RankSummary:
    """Load one rank's trace and measure it (runs inside a worker process)."""
    from .rules.engine import run_rules

    try:
        trace = load(path)
    except TraceError as exc:  # exceptions with custom __init__ do not pickle back
        return RankSummary(path, None, [], 0.0, 0.0, 0.0, 0.0, 0.0, 0, error=exc.problem)
    work = trace.device_work
    coll, comp, overlapped, count = collective_overlap(trace)
    outcome = run_rules(trace, config=config)
    return RankSummary(
        path=path,
        rank=trace.meta.rank,
        steps=[(s.number, s.dur) for s in trace.steps],
        window_us=trace.end_time - trace.start_time,
        device_busy_us=union_length(trace.ts[work], trace.end[work]),
        collective_us=coll,
        compute_us=comp,
        overlapped_us=overlapped,
        collective_kernels=count,
        collectives=collective_sequence(trace),
        findings=[f.to_dict() for f in outcome.findings],
        not_checked=[s.to_dict() for s in outcome.not_checked],
        exposed_us=median([s.exposed_us for s in stream_report(trace).steps] or [0.0]),
    )


def trace_files(paths: list[Path]) -> list[Path]:
    """The trace files named, directories expanded to the traces they hold (sorted)."""
    out: list[Path] = []
    for p in paths:
        if p.is_dir():
            out.extend(sorted(f for f in p.iterdir() if f.name.endswith(TRACE_SUFFIXES)))
        elif p.exists():
            out.append(p)
        else:
            raise TraceError(p, "no such file or directory")
    if not out:
        raise UsageError(f"no trace files (*.json, *.json.gz) in {', '.join(map(str, paths))}")
    return out


def summarize_ranks(
    paths: list[Path],
    jobs: int = 1,
    config: dict | None = None,
    executor: str = "local",
    address: str | None = None,
) -> dict[int, RankSummary]:
    """Per rank summaries, measured by `executor` (`executors.run_each`) with `jobs`
    local processes (inline when jobs <= 1 and local)."""
    files = [str(p) for p in trace_files(paths)]
    if executor == "local" and jobs > 1:
        from .rules.engine import load_rules

        load_rules()  # import the rule modules once, before the workers fork
    summaries = run_each(summarize_rank, files, config, executor, jobs, address)
    for s in summaries:
        if s.error:
            raise TraceError(s.path, s.error)
    return _assign_ranks(summaries)


def _assign_ranks(summaries: list[RankSummary]) -> dict[int, RankSummary]:
    by_rank: dict[int, RankSummary] = {}
    for position, s in enumerate(summaries):
        rank = s.rank
        if rank is None and (m := RANK_IN_NAME.search(Path(s.path).name)):
            rank = int(m.group(1))
        if rank is None:
            rank = position
        if rank in by_rank:
            raise UsageError(
                f"two traces claim rank {rank}: {by_rank[rank].path} and {s.path} "
                "(one trace per rank, from one run)"
            )
        s.rank = rank
        by_rank[rank] = s
    return dict(sorted(by_rank.items()))


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


def rank_ranges(ranks: list[int]) -> str:
    """[0, 1, 2, 3, 5] -> "0-3,5"."""
    ranks = sorted(ranks)
    parts, start = [], None
    for k, r in enumerate(ranks):
        if start is None:
            start = r
        if k + 1 == len(ranks) or ranks[k + 1] != r + 1:
            parts.append(f"{start}-{r}" if r != start else f"{r}")
            start = None
    return ",".join(parts)


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
    out.sort(key=lambda f: (-f["impact_us"]["max"], SEVERITY_ORDER[f["severity"]], f["id"]))
    return out


def explain_ranks(
    paths: list[Path],
    jobs: int,
    config: dict,
    fmt: str,
    executor: str = "local",
    address: str | None = None,
) -> str:
    """The multi-rank report as text, markdown or JSON."""
    if fmt not in ("text", "md", "json", "html"):
        raise UsageError(f"multi-rank reports come as text, md, json or html, not {fmt!r}")
    ranks = summarize_ranks(paths, jobs, config, executor, address)
    report = MultiRankReport(ranks)
    if fmt == "json":
        return dumps(report.as_json(), indent=2)
    if fmt == "html":
        from .multirank_html import render_ranks_page

        return render_ranks_page(report, config)
    return report.render(markdown=fmt == "md")


class MultiRankReport:
    """The comparison across ranks, computed once, rendered as text/markdown/JSON."""

    def __init__(self, ranks: dict[int, RankSummary]) -> None:
        self.ranks = ranks
        self.waits, self.matched = collective_waits(ranks)
        self.stragglers = stragglers(ranks)
        self.findings = merged_findings(ranks)
        self.median_step = median(s.step_us for s in ranks.values())
        self.median_wait = median(self.waits.values()) if self.waits else 0.0

    def straggler_text(self) -> str:
        if not self.matched:
            return "No straggler analysis: no collective kernels matched across ranks."
        if not self.stragglers:
            return (
                f"No straggler: the median rank waits {self.median_wait / 1e3:.2f} ms at "
                f"{self.matched} collectives, and no rank waits under "
                f"{STRAGGLER_WAIT_RATIO:g}x that."
            )
        others = [w for r, w in self.waits.items() if r not in self.stragglers]
        described = ", ".join(
            f"rank {r} (waits {self.waits[r] / 1e3:.2f} ms at collectives, step "
            f"{self.ranks[r].step_us / 1e3:.2f} ms, "
            f"compute {self.ranks[r].compute_us / 1e3:.2f} ms)"
            for r in self.stragglers
        )
        return (
            f"Straggler{'s' if len(self.stragglers) > 1 else ''}: {described}. The other ranks "
            f"wait a median {median(others) / 1e3:.2f} ms (up to {max(others) / 1e3:.2f} ms) "
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
        }

    def render(self, markdown: bool) -> str:
        head = ["rank", "steps", "step ms", "busy ms", "compute ms", "coll. ms", "coll. share",
                "coll. wait ms", "overlap", "exposed ms"]  # fmt: skip
        rows = []
        for r, s in self.ranks.items():
            rows.append(
                [
                    str(r) + (" *" if r in self.stragglers else ""),
                    str(len(s.steps)) if s.steps else "-",
                    f"{s.step_us / 1e3:.2f}",
                    f"{s.device_busy_us / 1e3:.2f}",
                    f"{s.compute_us / 1e3:.2f}",
                    f"{s.collective_us / 1e3:.2f}",
                    f"{s.collective_share:.1%}",
                    f"{self.waits[r] / 1e3:.2f}" if self.matched else "-",
                    f"{s.overlap:.1%}" if s.overlap is not None else "-",
                    f"{s.exposed_us / 1e3:.2f}",
                ]
            )
        h = "## " if markdown else ""
        lines = [f"{h}{len(self.ranks)} ranks, median step {self.median_step / 1e3:.2f} ms", ""]
        lines.extend(_table(head, rows, markdown))
        lines += [
            "",
            "step ms: median over the rank's steps (the window without steps); "
            "coll.: collective (NCCL/RCCL) kernels; coll. share: of device busy time; coll. "
            "wait: time in collectives waiting for the last rank; overlap: share of collective "
            "time during which compute kernels ran on other streams; exposed: communication per "
            "step (median) with no compute beside it; *: straggler",
            "",
            self.straggler_text(),
            "",
            f"{h}Findings (merged across ranks)",
        ]
        for f in self.findings:
            impact = f["impact_us"]
            span = (
                f"{impact['min'] / 1e3:.2f}-{impact['max'] / 1e3:.2f} ms/step"
                if impact["max"] > 0
                else "info"
            )
            lines.append(
                f"{'- ' if markdown else '  '}rank{'s' if len(f['ranks']) > 1 else ''} "
                f"{rank_ranges(f['ranks'])}: [{f['severity']}] {f['id']}: {f['title']} "
                f"(worst on rank {f['worst_rank']}; {span})"
            )
        if not self.findings:
            lines.append("  none")
        return "\n".join(lines)


def _table(head: list[str], rows: list[list[str]], markdown: bool) -> list[str]:
    if markdown:
        out = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
        return out + ["| " + " | ".join(r) + " |" for r in rows]
    widths = [max(len(h), *(len(r[k]) for r in rows)) for k, h in enumerate(head)]
    fmt = "  ".join(f"{{:>{w}}}" for w in widths)
    return [fmt.format(*head), *(fmt.format(*r) for r in rows)]


__all__ = ["RankSummary", "explain_ranks", "summarize_ranks"]
