"""The capture stores how busy the machine was (issue 31, item 4): a loop recorded under
deliberate thread oversubscription carries the wait in its metadata, and the trust grade
says so beside the verdict."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

import kinetoscope

from ..capture_helpers import run_cli

HOG = "import time\nend = time.time() + 120\nwhile time.time() < end: pass\n"


def test_a_loop_on_a_busy_machine_says_so(tmp_path, monkeypatch):
    pytest.importorskip("torch")
    # two busy processes on every core, and eight math threads for the workload's own GEMMs
    hogs = [subprocess.Popen([sys.executable, "-c", HOG]) for _ in range(2 * (os.cpu_count() or 1))]
    try:
        monkeypatch.setenv("OMP_NUM_THREADS", "8")
        done = run_cli("profile", "matmul_add", "--device", "cpu", "--size", "256",
                       "--dtype", "fp32", "--warmup", "1", "--out", str(tmp_path))  # fmt: skip
    finally:
        for hog in hogs:
            hog.kill()
            hog.wait()
    assert done.returncode == 0, done.stderr
    (path,) = tmp_path.rglob("*.json")
    load = json.loads(path.read_text())["kinetoscope"]["machine_load"]
    assert load["wall_s"] > 0 and load["run_queue_s"] / load["wall_s"] >= 0.1
    report = kinetoscope.explain(path)
    ids = {i["id"] for i in report.quality["issues"]}
    assert ids & {"cpu-busy", "cpu-contended"}
    assert "waited for a CPU" in " ".join(report.quality["reasons"])
