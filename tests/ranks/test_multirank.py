"""Multi-rank analysis on the 8-rank DLRM job (one trace per rank, a common clock)."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest

import kinetoscope
from kinetoscope.errors import TraceError, UsageError
from kinetoscope.ranks.multirank import (
    NotRanks,
    collective_overlap,
    explain_ranks,
    rank_ranges,
    summarize_ranks,
)

from ..conftest import CORPUS, kernel, write_trace

DLRM = CORPUS / "multirank" / "dlrm_8ranks"


@pytest.fixture(scope="module")
def dlrm():
    if not DLRM.is_dir():
        pytest.skip(f"{DLRM} not found")
    return DLRM


def test_per_rank_table_straggler_and_overlap(dlrm):
    report = json.loads(explain_ranks([dlrm], jobs=2, config={}, fmt="json"))
    ranks = {r["rank"]: r for r in report["ranks"]}
    assert sorted(ranks) == list(range(8))  # from distributedInfo.rank
    # every rank ran the same 8 collectives (5 SendRecv, 3 AllReduce) in the same order
    assert report["matched_collectives"] == 8
    assert all(r["collective_kernels"] == 8 for r in ranks.values())
    # the straggler is the rank the others wait for: rank 7 starts its step last
    # (1428.7 ms vs 1421.2 ms for rank 1 on the shared clock), so its first SendRecv
    # lasts 10 us while rank 1's lasts 7.6 ms; its total wait is 1.53 ms against a
    # median of 5.8 ms across ranks
    assert [s["rank"] for s in report["stragglers"]] == [7]
    assert report["stragglers"][0]["collective_wait_us"] == pytest.approx(1532, abs=5)
    assert report["median_collective_wait_us"] == pytest.approx(5805, abs=10)
    # rank 1 waited the most: 11.1 ms, and has the longest step (19.9 ms)
    assert max(ranks, key=lambda r: ranks[r]["collective_wait_us"]) == 1
    assert ranks[1]["step_us"] == pytest.approx(19901, abs=1)
    # collectives dominate device time (66-92%); compute kernels hide little of them
    for r in ranks.values():
        assert 0.6 < r["collective_share"] < 0.95
        assert 0.0 <= r["overlap"] < 0.1
    assert ranks[7]["overlap"] == pytest.approx(0.095, abs=0.005)
    merged = {f["id"]: f for f in report["findings"]}
    assert merged["host-sync"]["ranks"] == list(range(8))


def test_text_and_markdown(dlrm):
    text = explain_ranks([dlrm], jobs=1, config={}, fmt="text")
    assert "8 ranks, median step 16.1 ms" in text
    assert "0.00" not in text  # every time in a unit that shows it
    assert "  rank 7: " + str(dlrm / "worker7_step_12.1694128201553.pt.trace.json.gz") in text
    assert "Straggler: rank 7 (waits 1.53 ms at collectives" in text
    # every rank blocks in syncs (rank 1: 7.51 ms of 8 syncs), mostly while NCCL and compute
    # kernels run: host-sync names the sites on all ranks, saving only their stall
    assert re.search(r"ranks 0-7: \[(info|warn)\] host-sync", text)
    assert "overlap" in text.splitlines()[2]
    md = explain_ranks(sorted(dlrm.iterdir()), jobs=2, config={}, fmt="md")
    assert "| rank | steps | step |" in md and "| 7 \\* | 1 | 12.5 ms |" in md


def test_html_on_the_shared_page(dlrm):
    """Rank 7 is the straggler (the markdown table marks it `7 *`): its row is flagged."""
    page = explain_ranks([dlrm], jobs=1, config={}, fmt="html")
    assert page.lstrip().startswith("<!DOCTYPE html>") and '<div class="ks">' in page
    assert '<tr class="outlier"><td data-v="7">7 (straggler)</td>' in page
    assert page.count('<tr class="outlier">') == 1 and page.count("<tr><td data-v=") == 7


def test_html_draws_the_straggler_above_the_rank_waiting_longest(dlrm):
    """Rank 7 is the straggler and rank 1 waits longest for it (11.1 ms; see the first
    test): their timelines, in that order, each with its own findings; the table names
    files once the folder is said above it."""
    import re

    page = explain_ranks([dlrm], jobs=1, config={}, fmt="html")
    keys = re.findall(r'<div class="tl" data-timeline="(\w+)" data-group="ranks">', page)
    assert keys == ["r7", "r1"]
    assert "rank 7 (straggler)" in page and "rank 1 (waits longest at collectives, 11.1 ms)" in page
    payloads = [json.loads(p) for p in re.findall(r'"application/json">(.*?)</script>', page)]
    for key, payload in zip(keys, payloads, strict=True):
        cards = re.findall(rf'data-finding="(\d+)" data-for="{key}"', page)
        assert sorted(map(int, cards)) == list(range(len(payload["findings"]))) and cards
        assert [s[0] for s in payload["steps"]] == ["#10"]  # one ProfilerStep per rank
    assert f"traces in <code>{dlrm}</code>" in page
    assert '<td class="name file" title="' in page and f">{dlrm}/worker0" not in page


def test_jobs_do_not_change_results(dlrm):
    one = summarize_ranks([dlrm], jobs=1)
    two = summarize_ranks([dlrm], jobs=2)
    assert one == two


def test_config_reaches_the_workers(dlrm):
    config = {"profiling-window": {"min_steps": 1}}
    report = json.loads(explain_ranks([dlrm], jobs=2, config=config, fmt="json"))
    assert "profiling-window" not in {f["id"] for f in report["findings"]}


def test_rank_from_file_name_and_duplicates(tmp_path):
    for rank in (3, 1):
        events = [kernel("ncclKernel_AllReduce_x", 100, 50 if rank == 1 else 10, correlation=1)]
        write_trace(tmp_path / f"worker{rank}_trace.json", events)
    ranks = summarize_ranks([tmp_path])
    assert sorted(ranks) == [1, 3]
    assert ranks[3].collective_us == 10
    write_trace(tmp_path / "rank3.json", [kernel("k", 0, 1, correlation=1)])
    with pytest.raises(NotRanks, match="two traces claim rank 3: rank3.json and worker3_trace"):
        summarize_ranks([tmp_path])


def _run(rank: int) -> list[dict]:
    return [kernel("ncclKernel_AllReduce_x", 100, 10 + rank, correlation=1)]


@pytest.mark.parametrize(
    "infos, why",
    [
        # seven unrelated runs of one workload (sizes, compile on and off): no rank anywhere
        ([None, None], "a name such as 16_fp32_cold_eager.json does not number a rank"),
        ([{"rank": 0, "world_size": 1}, {"rank": 0, "world_size": 1}], "two traces claim rank 0"),
        ([{"rank": 0, "world_size": 2}, {"rank": 1, "world_size": 4}], "world sizes differ (2, 4)"),
        ([{"rank": 0, "world_size": 2}, None], "1 of them carry no distributedInfo rank"),
        ([{"rank": 0, "world_size": 2}, {"rank": 2, "world_size": 2}], "rank 2 of a world of 2"),
    ],
)
def test_a_folder_is_ranks_only_when_its_traces_are_ranks_of_one_job(tmp_path, infos, why):
    for name, info in zip(
        ["16_fp32_cold_eager.json", "64_fp32_cold_compile.json"], infos, strict=True
    ):
        top = {"distributedInfo": info} if info else {}
        write_trace(tmp_path / name, _run(0), **top)
    with pytest.raises(NotRanks, match=re.escape(why)):
        summarize_ranks([tmp_path])


def test_ranks_by_metadata_whatever_the_names(tmp_path):
    for rank in (1, 0):
        top = {"distributedInfo": {"rank": rank, "world_size": 4}}
        write_trace(tmp_path / f"run_{rank + 10}.json", _run(rank), **top)
    ranks = summarize_ranks([tmp_path])
    assert {r: Path(s.path).name for r, s in ranks.items()} == {0: "run_10.json", 1: "run_11.json"}


def test_bad_inputs(tmp_path):
    with pytest.raises(UsageError, match="no trace files"):
        summarize_ranks([tmp_path])
    (tmp_path / "worker0.json").write_text("{not json")
    with pytest.raises(TraceError):
        summarize_ranks([tmp_path], jobs=2)
    with pytest.raises(UsageError, match="text, md, json or html"):
        explain_ranks([tmp_path], jobs=1, config={}, fmt="xml")


def test_overlap_counts_compute_on_other_streams_only(tmp_path):
    events = [
        kernel("ncclDevKernel_AllReduce", 0, 100, correlation=1, stream=20),
        kernel("gemm", 50, 100, correlation=2, stream=7),  # overlaps 50 us on another stream
        kernel("gemm_same_stream", 200, 10, correlation=3, stream=20),
    ]
    trace = kinetoscope.load(write_trace(tmp_path / "t.json", events))
    coll, comp, overlapped, count = collective_overlap(trace)
    assert (coll, comp, overlapped, count) == (100, 110, 50, 1)


def test_rank_ranges():
    assert rank_ranges([0, 1, 2, 3, 5, 7, 6]) == "0-3,5-7"
    assert rank_ranges([4]) == "4"


def test_copy_of_dir_is_untouched(dlrm, tmp_path):
    copy = tmp_path / "job"
    shutil.copytree(dlrm, copy)
    before = {p.name: p.stat().st_mtime_ns for p in copy.iterdir()}
    explain_ranks([copy], jobs=2, config={}, fmt="text")
    assert {p.name: p.stat().st_mtime_ns for p in copy.iterdir()} == before


def test_merged_findings_read_in_one_order_in_every_format():
    """The HTML page re-sorted merged findings by severity while text and JSON listed them
    otherwise: every format reads them as single-trace findings are, by the largest time a
    fix saves on any rank (exposed communication first on DLRM)."""
    doc = json.loads(explain_ranks([DLRM], jobs=1, config={}, fmt="json"))
    impacts = [f["impact_us"]["max"] for f in doc["findings"]]
    assert impacts == sorted(impacts, reverse=True)
    assert doc["findings"][0]["id"] == "exposed-communication"
    text = explain_ranks([DLRM], jobs=1, config={}, fmt="text")
    said = re.findall(r"\[(?:critical|warn|info)\] ([a-z0-9-]+):", text)
    assert said == [f["id"] for f in doc["findings"]]
