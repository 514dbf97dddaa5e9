"""dataloader-bound on real CPU traces: `kinetoscope profile dataloader`, 0 vs 2 workers.

The workload's dataset builds each image on demand with real CPU work (blur
passes); the model is a two-layer MLP. With `--num-workers 0` the main process
builds every batch inside DataLoader.__next__; with 2 workers the batches are
prefetched while the model runs and __next__ only hands one over.

What the recordings are checked for is what they always hold: where the batch was
built (the blur ops inside __next__, or in a worker the profiler does not record).
How large a share of the step that takes is a measured time, which a loaded
machine stretches either way (35% against 3% here, alone); whether the rule fires
at a share is decided on traces whose shares are fixed (`test_rules_regime_waits`:
the resnet50 corpus pair, 0 and 4 workers; `_loop` below, built to the shares
measured here).
"""

from __future__ import annotations

import numpy as np
import pytest

import kinetoscope
from kinetoscope.analysis.dataloader import data_waits, next_events
from kinetoscope.rules.engine import run_rules

from ..capture_helpers import profile_here
from ..conftest import op, write_trace

pytest.importorskip("torch")  # the capture runs the workload under torch.profiler

BATCH, BLUR = 4, 3
#: small on purpose: only where each batch is built is checked, not how long it takes
WORKLOAD = ["--device", "cpu", "--batch", str(BATCH), "--blur", str(BLUR), "--image", "16",
            "--hidden", "64", "--warmup", "1"]  # fmt: skip


def _blur_calls_inside_next(trace: kinetoscope.Trace) -> list[int]:
    """Per __next__ range, the dataset's blur passes (aten::avg_pool2d) inside it."""
    pools = np.flatnonzero(
        np.isin(trace.name_id, trace.name_ids_matching("aten::avg_pool2d".__eq__))
    )
    return [
        int(((trace.ts[pools] >= trace.ts[n]) & (trace.end[pools] <= trace.end[n])).sum())
        for n in next_events(trace).tolist()
    ]


def test_profile_dataloader_workload_builds_batches_where_the_workers_say(tmp_path):
    """0 workers: every batch's blur passes run inside __next__; 2 workers: none do."""
    for workers in (0, 2):
        out = tmp_path / f"w{workers}"
        result = profile_here("dataloader", *WORKLOAD, "--num-workers", str(workers),
                              "--out", str(out))  # fmt: skip
        assert result.returncode == 0, result.stderr[-2000:]
        (path,) = (out / "06_dataloader").glob("*.json")
        trace = kinetoscope.load(path)
        assert len(data_waits(trace)) == 3  # schedule wait 1, warmup 1, active 3: #2-#4
        calls = _blur_calls_inside_next(trace)
        assert calls and all(c == (BATCH * BLUR if workers == 0 else 0) for c in calls), calls


def _loop(path, next_us: float) -> kinetoscope.Trace:
    """Three CPU steps of 1 ms: `next_us` inside DataLoader.__next__, then the model."""
    events = []
    for step in range(3):
        start = step * 1000.0
        events += [
            op(f"ProfilerStep#{step + 2}", start, 1000),
            op("enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__", start + 1, next_us),
            op("aten::mm", start + next_us + 5, 990 - next_us),
        ]
    return kinetoscope.load(write_trace(path, events))


@pytest.mark.parametrize(("next_us", "fires"), [(350.0, True), (30.0, False)])
def test_dataloader_bound_at_the_shares_measured_on_the_workload(tmp_path, next_us, fires):
    trace = _loop(tmp_path / "loop.json", next_us)
    assert [round(w.share, 2) for w in data_waits(trace)] == [next_us / 1000] * 3
    assert bool(run_rules(trace, only=["dataloader-bound"]).findings) == fires
