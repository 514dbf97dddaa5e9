"""`kinetoscope tune`, end to end on CPU: real trials, real timings, real traces (built-in
workloads here; a user's script in `test_tune_scripts.py`, a file of its own so that
pytest-xdist's `--dist loadfile` runs the two halves on two cores). The sessions and their
trials run in this process (`tune_here`: a trial child costs ~3 s of CPU before its first
step); the trial process itself (its timeout, crash, Ctrl-C) is tested with children in
`test_tune_scripts.py`.

Expectations come from the mechanism, not from a run: a DataLoader building
batches in the main process (workers 0) is data-bound, so the tuner must try
worker counts, and a worker count wins only where its speed-up interval lies
above 1.0; compile on a tiny matmul has nothing to save, so it never wins.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from .tune_here import tune_here

pytest.importorskip("torch")  # every trial runs under torch

#: small trials: 3 warm-up steps, 6 timed blocks of 2 steps
QUICK = ["--warmup", "3", "--blocks", "6", "--block-steps", "2"]


def _tune(*args: str, children: bool = False) -> tuple[subprocess.CompletedProcess, dict | None]:
    """A session in this process (`tune_here`), its trials too unless `children`."""
    result = tune_here(*args, "--format", "json", children=children)
    doc = json.loads(result.stdout) if result.returncode == 0 else None
    return result, doc


def _trial(doc: dict, label: str) -> dict:
    return next(t for t in doc["trials"] if t["label"] == label)


def _accepted_only_beyond_noise(doc: dict) -> None:
    """Accepted: beyond the noise against the reference's runs before and after; rejected:
    within it against one of them, or a measurement fault."""
    for t in doc["trials"]:
        j = t["judgement"]
        if t["accepted"]:
            assert j["before"]["low"] > 1.0 and j["after"]["low"] > 1.0, t
            assert t["speed"]["low"] > 1.0 and j["fault"] is None, t
        elif t["accepted"] is False:
            beaten = j["before"]["low"] > 1.0 and j["after"]["low"] > 1.0
            assert not beaten or j["fault"], t


def test_tune_dataloader_finds_workers(tmp_path, monkeypatch):
    """workers 0 is data-bound; the tuner tries workers and keeps one that beats the noise.

    Each item waits 5 ms as a disk or network read does (`read_ms`), so the gain of two
    workers comes from two reads waiting side by side: about 2x by mechanism, and it holds
    on a machine whose cores other jobs keep busy (CPU-bound loading gains only from idle
    cores). One worker reads as serially as the main process did: no real gain there."""
    monkeypatch.setenv("OMP_NUM_THREADS", "1")
    result, doc = _tune(
        "dataloader", "--device", "cpu", "--num-workers", "0", "--batch", "8", "--blur", "2",
        "--read-ms", "5", "--hidden", "64", "--blocks", "8", "--block-steps", "2",
        "--warmup", "3", "--trials", "2",
        "--out", str(tmp_path),
    )  # fmt: skip
    assert result.returncode == 0, result.stderr[-3000:]
    base = _trial(doc, "baseline")
    assert base["regime"] == "data-bound", base
    assert base["params"]["num_workers"] == 0
    tried = {p["name"] for p in doc["plans"]}
    assert "num_workers" in tried and "compile" not in tried and "batch" not in tried
    assert {"pin_memory", "persistent_workers"} <= {s["knob"] for s in doc["skipped"]}
    workers = [t for t in doc["trials"] if t["stage"] == "single"]
    assert workers and all(set(t["setting"]) == {"num_workers"} for t in workers)
    assert all(t["params"]["num_workers"] == t["setting"]["num_workers"] for t in workers)
    _accepted_only_beyond_noise(doc)
    if doc["best"] is None:
        # a machine loaded past its cores (a full test run beside two fuzz runs, or beside
        # two CPU hogs) widened the blocks' spread until two workers' 2x read as within the
        # noise against one of the baseline's runs around the trial (0.57-4.8x once; once
        # 1.07-2.11x over both runs pooled, yet not beyond the noise against each): the
        # tuner then keeps the baseline. Each worker trial was judged and turned down, by
        # the rule `_accepted_only_beyond_noise` holds it to above.
        assert all(t["accepted"] is False for t in workers), [
            (t["label"], t["accepted"], t["judgement"]) for t in workers
        ]
        return
    assert doc["best_setting"]["num_workers"] == 2
    best = _trial(doc, doc["best"])
    assert best["speed_vs_baseline"]["low"] > 1.0
    assert best["step_time_us"]["median"] < base["step_time_us"]["median"]
    assert doc["throughput_unit"] == "samples/s"
    assert doc["diff"] is not None and Path(doc["diff"]["file"]).is_file()
    assert Path(best["trace"]).is_file() and Path(base["trace"]).is_file()
    folder = Path(base["trace"]).parent
    assert {"tune.json", "tune.txt", "tune.png", "tune.svg", "diff.txt"} <= {
        p.name for p in folder.iterdir()
    }
    assert doc["not_run"]  # --trials 2 stopped the session before the drift check


def test_tune_compile_on_a_tiny_matmul_is_never_kept(tmp_path, monkeypatch):
    """torch.compile on a 64x64 CPU matmul + add: eager runs one MKL GEMM and one small add;
    the compiled call adds Dynamo's guard checks and Inductor's wrapper around an extern
    addmm, so there is no dispatch to save worth its cost (0.41x measured on a quiet moment
    of this machine). A "150x" here can only be a measurement fault: the baseline stays
    best, and the compile trial ran between two baseline runs (its first call, the
    compilation, in the untimed warm-up).

    One BLAS thread, as in a sweep: with two, on this 2-core machine under 6 runnable
    processes, an eager step waited for the descheduled second thread (16 ms a step,
    compiled 8 ms: "2x", refused only as a measurement fault, and a second thread
    spinning through every timed block); with one, eager is 36 us and compiled 114 us,
    the mechanism's 0.3x."""
    monkeypatch.setenv("OMP_NUM_THREADS", "1")
    result, doc = _tune("matmul_add", "--device", "cpu", "--knob", "compile=default",
                        *QUICK, "--out", str(tmp_path))  # fmt: skip
    assert result.returncode == 0, result.stderr[-3000:]
    assert [t["stage"] for t in doc["trials"]] == ["baseline", "single", "baseline again"]
    compiled = _trial(doc, "compile=default")
    assert compiled["bracket"] == [0, 2]
    assert compiled["accepted"] is not True, compiled["judgement"]
    assert doc["best"] is None
