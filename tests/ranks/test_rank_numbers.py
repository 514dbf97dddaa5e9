"""A rank's row in `explain DIR` shows the numbers `explain FILE` shows for that file.

Both read `analysis.stats` (step time, device busy over the steps' window) and the
communication kernels of `analysis.kernel_types` launched in that window. The rank code
once measured device busy and collective time over the whole trace: work launched
before or after the profiled steps (8 kernels and memsets, 300 us, around the one step
of the H100 Qwen trace) counted in the rank table and not in `explain FILE`, and where
consecutive steps' work overlaps on the device (the MI300 ResNet trace, 3 steps with
RCCL collectives), the whole-trace union (84.0 ms) disagreed with the per-step sum the
single-trace report gives (85.7 ms), collective share 85.1% against 83.5%.
"""

from __future__ import annotations

import gzip
import json
import shutil
from pathlib import Path
from statistics import median

import pytest
from typer.testing import CliRunner

from kinetoscope.cli import app
from kinetoscope.ranks.summary import summarize_rank

from ..conftest import corpus, kernel, launch, op, write_trace


def _json(*args: str) -> dict:
    result = CliRunner().invoke(app, [*args, "--format", "json"])
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def _dlrm(tmp_path: Path) -> list[str]:
    return [str(corpus("multirank/dlrm_8ranks"))]


def _sampled(tmp_path: Path) -> list[str]:
    return [str(corpus(f"gpu/sampled_rank{r}.json.gz")) for r in (0, 1)]


def _qwen_twice(tmp_path: Path) -> list[str]:
    """One real trace as ranks 0 and 1, numbered by file name (it has no distributedInfo)."""
    source = corpus("gpu/tracelens_h100__Qwen_Qwen1.5-0.5B-Chat__1016005.json.gz")
    for rank in (0, 1):
        shutil.copyfile(source, tmp_path / f"rank{rank}_qwen.json.gz")
    return [str(tmp_path)]


def _mi300_twice(tmp_path: Path) -> list[str]:
    """The MI300 ResNet trace (distributedInfo rank 0 of 8) and a copy saying rank 1."""
    source = corpus("gpu/tracelens_mi300__resnet_act_checkpoint.json.gz")
    shutil.copyfile(source, tmp_path / "r0.json.gz")
    text = gzip.decompress(source.read_bytes())
    info = b'"distributedInfo": {"backend": "nccl", "rank": '
    assert text.count(info + b"0,") == 1
    (tmp_path / "r1.json.gz").write_bytes(
        gzip.compress(text.replace(info + b"0,", info + b"1,"), compresslevel=1)
    )
    return [str(tmp_path)]


@pytest.mark.parametrize("job", [_dlrm, _sampled, _qwen_twice, _mi300_twice])
def test_rank_rows_equal_single_trace_figures(job, tmp_path):
    ranks = _json("explain", *job(tmp_path))
    assert ranks["kind"] == "ranks" and len(ranks["ranks"]) >= 2
    alone = {}
    for row in ranks["ranks"]:
        if row["path"] not in alone:
            alone[row["path"]] = _json("explain", row["path"])
        single = alone[row["path"]]
        metrics, streams = single["metrics"], single["streams"]
        where = f"rank {row['rank']}"
        # figures rounded to 3 decimals in the rank JSON, 4 in explain's
        assert row["step_us"] == pytest.approx(metrics["step_time_us"], abs=1e-3), where
        assert row["device_busy_us"] == pytest.approx(metrics["device_busy_us"], abs=1e-3), where
        assert len(row["steps"]) == metrics["steps"], where
        # the device's share of the window account's window (the steps until the work they
        # launched ends), the base of every share
        busy_ratio = row["device_busy_us"] / single["verdict"]["account_us"]["window_us"]
        assert busy_ratio == pytest.approx(metrics["device_busy_ratio"], abs=1e-4), where
        # collective share: of the same device busy time, over the same window's collectives
        # (no trace here has peer copies, the other communication `streams` counts)
        communication = streams.get("communication_us", 0.0)
        share = communication / metrics["device_busy_us"] if metrics["device_busy_us"] else 0.0
        assert row["collective_share"] == pytest.approx(share, abs=1e-4), where
        kinds = {t["type"]: t["events"] for t in single["kernel_types"]["types"]}
        assert row["collective_kernels"] == kinds.get("communication", 0), where
        exposed = median([s["exposed_us"] for s in streams.get("steps", [])] or [0.0])
        assert row["exposed_communication_us"] == pytest.approx(exposed, abs=1e-3), where


def test_collectives_launched_outside_the_steps_do_not_count(tmp_path):
    # one step [0, 100): an all-reduce and a GEMM launched in it, then a second all-reduce
    # launched at 150, after the step (a profiler's tail): device busy leaves that one
    # out, so collective time, count and the sequence matched across ranks must too
    events = [
        op("ProfilerStep#1", 0, 100, cat="user_annotation"),
        launch(10, 5, correlation=1),
        kernel("ncclDevKernel_AllReduce_Sum_f32_RING_LL", 20, 50, correlation=1, stream=20),
        launch(20, 5, correlation=2),
        kernel("gemm", 60, 30, correlation=2, stream=7),
        launch(150, 5, correlation=3),
        kernel("ncclDevKernel_AllReduce_Sum_f32_RING_LL", 160, 40, correlation=3, stream=20),
    ]
    path = write_trace(tmp_path / "rank0.json", events)
    summary = summarize_rank(str(path))
    assert summary.steps == [(1, 100)] and summary.device_busy_us == 70  # [20, 90)
    assert (summary.collective_us, summary.collective_kernels) == (50, 1)
    assert summary.compute_us == 30 and summary.overlapped_us == 10  # [60, 70)
    assert len(summary.collectives) == 1
    assert summary.collective_share == pytest.approx(50 / 70)
