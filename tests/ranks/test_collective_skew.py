"""Each collective compared across ranks (ranks/skew.py, TraceLens NcclAnalyser's
definitions): durations, the late arriver, arrival skew where the clocks compare.

Expectations read from the DLRM job's files (tests/data/traces/multirank/dlrm_8ranks,
step 10 on every rank, one V100 each, NCCL): 5 SendRecv kernels (the `nccl:all_to_all`
collective) and 3 AllReduce. The first all-to-all ends at 1694128201431.94 ms +-1 us on
all 8 ranks; it starts on rank 1 at .424306 s and on rank 7 at .431930 s, so rank 7 runs
it for 10 us and rank 1 for 7635 us: rank 7 arrived last, 7624 us after rank 1. Rank 7
has the shortest call in 4 of the 5 all-to-alls (rank 5 in the fifth, 10 us); the
all-reduces' shortest are rank 7 (86 us), rank 5 (20 us) and rank 4 (69 us).
"""

from __future__ import annotations

import json

import pytest

from kinetoscope.ranks.multirank import explain_ranks, summarize_ranks
from kinetoscope.ranks.skew import collective_skew

from ..conftest import CORPUS, kernel, write_trace

DLRM = CORPUS / "multirank" / "dlrm_8ranks"
SAMPLED = [CORPUS / "gpu" / "sampled_rank0.json.gz", CORPUS / "gpu" / "sampled_rank1.json.gz"]


@pytest.fixture(scope="module")
def dlrm_report():
    if not DLRM.is_dir():
        pytest.skip(f"{DLRM} not found")
    return json.loads(explain_ranks([DLRM], jobs=2, config={}, fmt="json"))


def test_dlrm_all_to_all_late_arriver_and_arrival_skew(dlrm_report):
    skew = dlrm_report["collective_skew"]
    assert skew["ranks"] == list(range(8)) and not skew["partial"]
    assert skew["matched_by"] == "step number" and skew["clock"]["comparable"]
    rows = {r["kind"]: r for r in skew["rows"]}
    a2a = rows["all_to_all"]
    assert a2a["family"] == "NCCL" and a2a["matched"] == a2a["compared"] == 5
    assert a2a["not_overlapping"] == a2a["unmatched_calls"] == 0
    # rank 7: 10 + 8 + 7 + 7 + 357 us; rank 1: 7635 + 1025 + 169 + 132 + 545 us
    assert a2a["per_rank_total_us"]["7"] == 389 and a2a["per_rank_total_us"]["1"] == 9506
    assert a2a["fastest_rank"] == 7 and a2a["slowest_rank"] == 1
    assert a2a["shortest_counts"] == {"5": 1, "7": 4} and a2a["late_arriver"] == 7
    assert a2a["arrival"]["last_rank"] == 7 and a2a["arrival"]["skew_us"]["max"] == 7624
    assert a2a["arrival"]["end_skew_max_us"] <= 3  # every rank ends together
    assert (a2a["worst"]["step"], a2a["worst"]["index"]) == (10, 1)
    assert a2a["worst"]["dur_us"]["7"] == 10 and a2a["worst"]["start_us"]["1"] == 0


def test_dlrm_all_reduce_has_no_single_late_arriver(dlrm_report):
    """Each all-reduce's shortest call is on another rank: a tie, so none is named."""
    ar = next(r for r in dlrm_report["collective_skew"]["rows"] if r["kind"] == "all_reduce")
    assert ar["compared"] == 3
    assert ar["shortest_counts"] == {"4": 1, "5": 1, "7": 1} and ar["late_arriver"] is None
    # third all-reduce: rank 0 starts at .439384 s, rank 4 at .440269 s
    assert ar["arrival"]["skew_us"]["max"] == 885


def test_every_format_shows_it():
    if not DLRM.is_dir():
        pytest.skip(f"{DLRM} not found")
    text = explain_ranks([DLRM], jobs=1, config={}, fmt="text")
    assert "Collectives across ranks" in text and "SHORTEST call arrived last" in text
    assert "rank 7 started 7.62 ms after the first rank" in text
    md = explain_ranks([DLRM], jobs=1, config={}, fmt="md")
    assert "## Collectives across ranks" in md and "| NCCL | all\\_to\\_all | 5 |" in md
    page = explain_ranks([DLRM], jobs=1, config={}, fmt="html")
    assert "<h2>Collectives across ranks</h2>" in page
    assert "<td>NCCL</td><td>all_to_all</td><td>5</td>" in page


def test_sampled_ranks_two_of_128_and_calls_that_cannot_be_one_collective():
    """sampled_rank0/1: ranks 0 and 1 of 128. Their first all-to-all of step 551 ends on
    rank 0 (1682725898.125046 s) before rank 1 starts its own (.129911 s): on one clock
    they are not one collective, and no all-to-all pair overlaps; both all-gathers do."""
    skew = collective_skew(summarize_ranks(SAMPLED))
    assert skew["partial"] and skew["world_size"] == 128
    rows = {r["kind"]: r for r in skew["rows"]}
    assert rows["all_to_all"]["matched"] == 4 and rows["all_to_all"]["compared"] == 0
    assert rows["all_gather"]["compared"] == 2 and rows["all_gather"]["not_overlapping"] == 0
    assert rows["all_reduce"]["not_overlapping"] == 2


def _rank_trace(tmp_path, rank, calls, base_ns=None, name="ncclKernel_AllReduce_RING_LL_Sum_float"):
    """A rank's file: one NCCL kernel per (ts, dur) in `calls`, distributedInfo rank/2."""
    top = {"distributedInfo": {"backend": "nccl", "rank": rank, "world_size": 2}}
    if base_ns is not None:
        top["baseTimeNanoseconds"] = base_ns
    events = [kernel(name, ts, dur, 10 + k, device=rank) for k, (ts, dur) in enumerate(calls)]
    return write_trace(tmp_path / f"rank{rank}.json", events, **top)


def test_base_time_puts_relative_timestamps_on_one_clock(tmp_path):
    """Kineto's ts count from each file's baseTimeNanoseconds: rank 1's base is 1 ms later,
    so its call at ts 500 starts at 1500 us on rank 0's scale, where rank 0 started at
    1000 us: both end at 2000 us. Rank 1 arrived last, 500 us late, with the shorter call."""
    paths = [
        _rank_trace(tmp_path, 0, [(1000, 1000)], base_ns=10**15),
        _rank_trace(tmp_path, 1, [(500, 500)], base_ns=10**15 + 10**6),
    ]
    skew = collective_skew(summarize_ranks(paths))
    row = skew["rows"][0]
    assert skew["clock"]["comparable"] and row["compared"] == 1
    assert row["late_arriver"] == 1 and row["arrival"]["last_rank"] == 1
    assert row["arrival"]["skew_us"]["max"] == 500 and row["arrival"]["end_skew_max_us"] == 0


def test_clocks_that_differ_compare_durations_only(tmp_path):
    """Rank 1's clock is a second off: no call overlaps its partner, so arrival is not
    compared; the durations still are (rank 1's calls are the shorter)."""
    paths = [
        _rank_trace(tmp_path, 0, [(1000, 300), (2000, 300)]),
        _rank_trace(tmp_path, 1, [(1_001_200, 100), (1_002_200, 100)]),
    ]
    skew = collective_skew(summarize_ranks(paths))
    row = skew["rows"][0]
    assert not skew["clock"]["comparable"] and "clocks differ" in skew["clock"]["why"]
    assert row["compared"] == 2 and row["arrival"] is None and row["late_arriver"] == 1
    text = explain_ranks(paths, jobs=1, config={}, fmt="text")
    assert "Arrival is not compared" in text


def test_mixed_clock_bases_and_unequal_counts(tmp_path):
    """One file writes baseTimeNanoseconds, the other not: origins differ, arrival not
    compared. Rank 1 holds a third all-reduce rank 0 does not: that window's calls are
    not matched (the n-th would pair different collectives)."""
    paths = [
        _rank_trace(tmp_path, 0, [(1000, 300), (2000, 300)], base_ns=10**15),
        _rank_trace(tmp_path, 1, [(1000, 300), (2000, 300), (3000, 300)]),
    ]
    skew = collective_skew(summarize_ranks(paths))
    assert not skew["clock"]["comparable"] and "baseTimeNanoseconds" in skew["clock"]["why"]
    row = skew["rows"][0]
    assert row["compared"] == 0 and row["unmatched_calls"] == 5
