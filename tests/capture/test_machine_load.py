"""The capture stores how busy the machine was (issue 31, item 4): a recorded loop carries
the run-queue wait of its profiled cycle in its metadata, and the trust grade reads exactly
that figure. No timing is asserted: what the machine measured is whatever it measured; the
test holds that it is stored and that the grade follows from the stored numbers (the
thresholds themselves are tested on built traces in tests/analysis/test_capture.py)."""

from __future__ import annotations

import json

import pytest

import kinetoscope
from kinetoscope.analysis.account.capture import CONTENDED_NOTE, CONTENDED_SHARE

from ..capture_helpers import run_cli


def test_a_recorded_loop_carries_its_machine_load_and_the_grade_reads_it(tmp_path):
    pytest.importorskip("torch")
    done = run_cli("profile", "matmul_add", "--device", "cpu", "--size", "64",
                   "--dtype", "fp32", "--warmup", "1", "--out", str(tmp_path))  # fmt: skip
    assert done.returncode == 0, done.stderr
    (path,) = tmp_path.rglob("*.json")
    load = json.loads(path.read_text())["kinetoscope"]["machine_load"]
    assert set(load) == {"run_queue_s", "wall_s", "cpus"}
    assert load["wall_s"] > 0 and load["run_queue_s"] >= 0 and load["cpus"] >= 1
    share = load["run_queue_s"] / load["wall_s"]
    ids = {i["id"] for i in kinetoscope.explain(path).quality["issues"]}
    expected = (
        {"cpu-contended"}
        if share >= CONTENDED_SHARE
        else {"cpu-busy"}
        if share >= CONTENDED_NOTE
        else set()
    )
    assert ids & {"cpu-busy", "cpu-contended"} == expected
