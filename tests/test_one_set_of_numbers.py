"""Every command shows the same figures for a trace: they all read `analysis.stats`.

`summary --format json`, `explain --format json`, `diff A A --format json`,
`check` and the HTML report run on representative corpus traces (plus every
small one); the shared figures must be equal, and timestamps relative to the
trace start with the origin given once.
"""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from kinetoscope.cli import app
from kinetoscope.compare.check import run_check
from kinetoscope.units import fmt_us

from .conftest import CORPUS, corpus, corpus_files

REPRESENTATIVE = [
    "gpu/resnet50_dataloader_workers0.pt.trace.json.gz",
    "gpu/tracelens_mi300__resnet_act_checkpoint.json.gz",
    "multirank/dlrm_8ranks/worker1_step_12.1694128201556.pt.trace.json",
]
SMALL = [str(p.relative_to(CORPUS)) for p in corpus_files() if p.stat().st_size < 100_000]


def _json(*args: str) -> dict:
    result = CliRunner().invoke(app, list(args))
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


@pytest.mark.parametrize("relative", REPRESENTATIVE + SMALL)
def test_commands_agree(relative):
    path = str(corpus(relative))
    explain = _json("explain", path, "--format", "json")
    summary = _json("summary", path, "--format", "json")
    diff = _json("diff", path, path, "--format", "json")
    m = explain["metrics"]
    # summary: the same metrics, steps relative to the same origin
    assert summary["origin_us"] == pytest.approx(explain["trace"]["origin_us"])
    for key in ("step_time_us", "device_busy_ratio", "kernels_per_step", "data_share"):
        assert summary["metrics"][key] == pytest.approx(m[key], abs=1e-4), key
    assert len(summary["steps"]) == len(explain["steps"])
    for s, e in zip(summary["steps"], explain["steps"], strict=True):
        assert s["start_us"] == pytest.approx(e["start_us"], abs=1e-3)
        assert s["start_us"] >= 0
        assert s["device_busy_us"] == pytest.approx(e["device_busy_us"], abs=1e-3)
        assert s["data_wait_us"] == pytest.approx(e["data_wait_us"], abs=1e-3)
    # diff A A: each side carries the explain figures
    for side in (diff["a"], diff["b"]):
        assert side["step_time_us"] == pytest.approx(m["step_time_us"], abs=1e-3)
        assert side["device_busy_ratio"] == pytest.approx(m["device_busy_ratio"], abs=1e-4)
        assert side["kernels_per_step"] == pytest.approx(m["kernels_per_step"])
        assert side["host_time_us"] == pytest.approx(m["host_time_per_step_us"], abs=1e-3)
    # check: the expressions measure the same numbers
    ratio = round(m["device_busy_ratio"], 4)
    outcomes = run_check(
        path,
        [
            f"kernels_per_step == {m['kernels_per_step']}",
            f"outlier_steps == {m['outlier_steps']}",
            f"regime == {explain['verdict']['regime']}",
            f"device_busy_ratio >= {ratio - 1e-3}",
            f"device_busy_ratio <= {ratio + 1e-3}",
        ],
    )
    assert all(o.passed for o in outcomes), [o.line() for o in outcomes]
    # the outlier count: step rows flagged == metrics == step-outlier's title
    flagged = sum(1 for s in explain["steps"] if s["outlier"])
    assert flagged == m["outlier_steps"]
    for f in explain["findings"]:
        if f["id"] == "step-outlier":
            assert f["title"].startswith(f"{flagged} of ")


@pytest.mark.parametrize("relative", REPRESENTATIVE[:1])
def test_html_shows_the_same_step_figures(relative, tmp_path):
    pytest.importorskip("jinja2")
    path = str(corpus(relative))
    explain = _json("explain", path, "--format", "json")
    out = tmp_path / "r.html"
    result = CliRunner().invoke(app, ["explain", path, "--format", "html", "-o", str(out)])
    assert result.exit_code == 0, result.output
    html = out.read_text()
    for row in explain["steps"]:
        assert fmt_us(row["device_busy_us"]) in html
        assert fmt_us(row["dur_us"]) in html
