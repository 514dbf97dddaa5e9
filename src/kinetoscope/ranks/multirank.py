"""One distributed job, one trace per rank: who is slow, and how well comms hide.

`explain_ranks` loads the rank traces in parallel (a process pool, or a Dask or
Ray cluster: `ranks/executors.py`; each worker
loads its trace, measures it and runs the rules, and sends back only small
picklable summaries), then compares ranks: step times and the straggler(s),
the share of device time in collective kernels (NCCL/RCCL, DeepEP, NVSHMEM,
custom all-reduce: the communication type of `analysis.kernel_types`), and how
much of that collective time is overlapped by compute kernels on other streams. The
per-rank findings are merged across ranks ("ranks 0-7: ...").

Traces are taken as ranks only when they are the ranks of one job: every trace's
`distributedInfo` names a distinct rank (and one world size, each rank below it),
or no trace has one and every file name numbers a distinct rank (`worker3_...`,
`rank_3...`). Otherwise `NotRanks` says why (seven unrelated runs of one workload
are not seven ranks), and `explain` reads each trace alone.

This module finds the trace files, assigns ranks and runs the workers; what a
worker measures is `ranks/summary.py`, the comparison `ranks/compare.py`, the
gathered report `ranks/report.py`.
"""

from __future__ import annotations

import re
from pathlib import Path

from ..errors import TraceError, UsageError
from ..formatting.jsontext import dumps
from ..formatting.units import rank_ranges
from .executors import run_each
from .html import render_ranks_page
from .report import MultiRankReport
from .summary import RankSummary, collective_overlap, summarize_rank

RANK_IN_NAME = re.compile(r"(?:rank|worker)[_\-.]?(\d+)", re.IGNORECASE)
TRACE_SUFFIXES = (".json", ".json.gz")


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
        from ..rules.engine import load_rules

        load_rules()  # import the rule modules once, before the workers fork
    summaries = run_each(summarize_rank, files, config, executor, jobs, address)
    for s in summaries:
        if s.error:
            raise TraceError(s.path, s.error)
    return _assign_ranks(summaries)


class NotRanks(UsageError):
    """The traces given are not the ranks of one job; the message says why."""


def _name_rank(path: str) -> int | None:
    m = RANK_IN_NAME.search(Path(path).name)
    return int(m.group(1)) if m else None


def _assign_ranks(summaries: list[RankSummary]) -> dict[int, RankSummary]:
    """Rank -> summary, when the traces are the ranks of one job; `NotRanks` otherwise."""
    n = len(summaries)
    with_info = [s for s in summaries if s.rank is not None]
    if with_info and len(with_info) < n:
        bare = next(s for s in summaries if s.rank is None)
        raise NotRanks(
            f"{n} traces, not the ranks of one job: {n - len(with_info)} of them carry no "
            f"distributedInfo rank (e.g. {Path(bare.path).name})"
        )
    if with_info:
        sizes = {s.world_size for s in summaries}
        if len(sizes) > 1:
            shown = ", ".join(str(x) for x in sorted(sizes, key=lambda x: (x is None, x or 0)))
            raise NotRanks(
                f"{n} traces, not the ranks of one job: their distributedInfo world sizes "
                f"differ ({shown})"
            )
        size = sizes.pop()
        beyond = next((s for s in summaries if size is not None and s.rank >= size), None)
        if beyond is not None:
            raise NotRanks(
                f"{Path(beyond.path).name} claims rank {beyond.rank} of a world of {size}"
            )
    else:
        for s in summaries:
            s.rank = _name_rank(s.path)
        if any(s.rank is None for s in summaries):
            unnamed = next(s for s in summaries if s.rank is None)
            raise NotRanks(
                f"{n} traces, not the ranks of one job: no distributedInfo rank in their "
                f"metadata, and a name such as {Path(unnamed.path).name} does not number a "
                "rank (worker<N>, rank<N>)"
            )
    by_rank: dict[int, RankSummary] = {}
    for s in summaries:
        if s.rank in by_rank:
            raise NotRanks(
                f"{n} traces, not the ranks of one job: two traces claim rank {s.rank}: "
                f"{Path(by_rank[s.rank].path).name} and {Path(s.path).name}"
            )
        by_rank[s.rank] = s
    return dict(sorted(by_rank.items()))


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
        return render_ranks_page(report, config)
    from ..report.ranks_render import render

    return render(report, markdown=fmt == "md")


#: the job's entry points, and the pieces tests and benches import from here
__all__ = [
    "MultiRankReport",
    "NotRanks",
    "RankSummary",
    "collective_overlap",
    "explain_ranks",
    "rank_ranges",
    "summarize_rank",
    "summarize_ranks",
    "trace_files",
]
