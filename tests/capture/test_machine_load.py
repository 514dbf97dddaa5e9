"""The capture stores how busy the machine was (issue 31, item 4): a recorded loop carries
the run-queue wait of its profiled cycle in its metadata, and the trust grade reads exactly
that figure. No timing is asserted: what the machine measured is whatever it measured; the
test holds that it is stored, and that the grade reads it, by rewriting the recording's own
figures to each side of the thresholds (tests/analysis/test_capture.py tests them on built
traces too)."""

from __future__ import annotations

import json

import pytest

import kinetoscope
from kinetoscope.analysis.account.capture import CONTENDED_NOTE, CONTENDED_SHARE

from ..capture_helpers import profile_here


def test_a_recorded_loop_carries_its_machine_load_and_the_grade_reads_it(tmp_path):
    pytest.importorskip("torch")
    done = profile_here("matmul_add", "--device", "cpu", "--size", "64",
                        "--dtype", "fp32", "--warmup", "1", "--out", str(tmp_path))  # fmt: skip
    assert done.returncode == 0, done.stderr
    (path,) = tmp_path.rglob("*.json")
    data = json.loads(path.read_text())
    load = data["kinetoscope"]["machine_load"]
    assert set(load) == {"run_queue_s", "wall_s", "cpus"}
    assert all(isinstance(v, int | float) for v in load.values())
    # the grade follows the stored figures: the recording's own metadata, rewritten to
    # figures on each side of the thresholds (no measured time is judged here)
    for waited, expected in (
        (0.0, set()),
        (CONTENDED_NOTE, {"cpu-busy"}),
        (CONTENDED_SHARE, {"cpu-contended"}),
    ):
        load.update(run_queue_s=waited, wall_s=1.0)
        graded = tmp_path / f"graded_{waited}.json"
        graded.write_text(json.dumps(data))
        ids = {i["id"] for i in kinetoscope.explain(graded).quality["issues"]}
        assert ids & {"cpu-busy", "cpu-contended"} == expected, waited
