"""dataloader-bound on real CPU traces: `kinetoscope profile dataloader`, 0 vs 2 workers.

The workload's dataset builds each image on demand with real CPU work (blur
passes); the model is a two-layer MLP. With `--num-workers 0` the main process
builds every batch inside DataLoader.__next__; with 2 workers the batches are
prefetched while the model runs and __next__ only hands one over.
"""

from __future__ import annotations

import pytest

import kinetoscope
from kinetoscope.analysis.dataloader import data_waits
from kinetoscope.rules.engine import run_rules

from ..capture_helpers import run_cli

pytest.importorskip("torch")  # the capture runs the workload under torch.profiler


#: a loop whose batch costs about a third of the model step when built in-process
WORKLOAD = ["--device", "cpu", "--batch", "32", "--blur", "64", "--hidden", "8192", "--warmup", "3"]


def test_profile_dataloader_workload_zero_vs_two_workers(tmp_path, monkeypatch):
    """dataloader-bound fires with 0 workers and stays silent with 2."""
    # one intra-op thread in the main process: it and the two workers share 2 cores
    monkeypatch.setenv("OMP_NUM_THREADS", "1")
    shares = {}
    for workers in (0, 2):
        out = tmp_path / f"w{workers}"
        result = run_cli("profile", "dataloader", *WORKLOAD, "--num-workers", str(workers),
                         "--out", str(out))  # fmt: skip
        assert result.returncode == 0, result.stderr[-2000:]
        (path,) = (out / "06_dataloader").glob("*.json")
        trace = kinetoscope.load(path)
        waits = data_waits(trace)
        assert len(waits) == 3  # schedule wait 1, warmup 1, active 3: steps #2-#4
        shares[workers] = sum(w.wait_us for w in waits) / sum(w.step_dur for w in waits)
        fired = run_rules(trace, only=["dataloader-bound"]).findings
        assert bool(fired) == (workers == 0), (workers, shares)
    # measured on a shared 2-core machine: 35-36% of each step inside __next__ with 0
    # workers (32 images x 64 blur passes built in the main process), 3-4% with 2 (the
    # hand-over of a finished batch)
    assert shares[0] > 0.10 > shares[2], shares
