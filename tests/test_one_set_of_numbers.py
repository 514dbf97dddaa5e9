"""Every command shows the same figures for a trace: they all read `analysis.stats`.

`summary --format json`, `explain --format json`, `diff A A --format json`,
`check` and the HTML report run on every corpus trace; the shared figures must
be equal, and timestamps relative to the trace start with the origin given once.
"""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from kinetoscope.cli import app
from kinetoscope.compare.check import run_check
from kinetoscope.units import fmt_us

from .conftest import CORPUS, corpus, corpus_files

EVERY_TRACE = [str(p.relative_to(CORPUS)) for p in corpus_files()]


def _assert_same(a, b, where: str) -> None:
    """Equal structure and values; numbers equal up to the reports' rounding (4 decimals)."""
    if isinstance(a, dict):
        assert isinstance(b, dict) and a.keys() == b.keys(), where
        for key in a:
            _assert_same(a[key], b[key], f"{where}.{key}")
    elif isinstance(a, list):
        assert isinstance(b, list) and len(a) == len(b), where
        for i, (x, y) in enumerate(zip(a, b, strict=True)):
            _assert_same(x, y, f"{where}[{i}]")
    elif isinstance(a, float | int) and not isinstance(a, bool):
        assert b == pytest.approx(a, rel=1e-6, abs=1e-4), where
    else:
        assert a == b, where


def _json(*args: str) -> dict:
    result = CliRunner().invoke(app, list(args))
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


@pytest.mark.parametrize("relative", EVERY_TRACE)
def test_commands_agree(relative, tmp_path):
    path = str(corpus(relative))
    explain = _json("explain", path, "--format", "json")
    summary = _json("summary", path, "--format", "json")
    diff = _json("diff", path, path, "--format", "json")
    m = explain["metrics"]
    # summary: the same metrics, steps relative to the same origin
    assert summary["origin_us"] == pytest.approx(explain["trace"]["origin_us"])
    assert summary["metrics"].keys() == m.keys()
    for key, value in m.items():
        assert summary["metrics"][key] == pytest.approx(value, abs=1e-4), key
    _assert_same(summary["statistics"], explain["statistics"], "statistics")
    _assert_same(summary["quality"], explain["quality"], "quality")
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
    _html_shows_the_same_figures(path, explain, tmp_path / "r.html")


def _html_shows_the_same_figures(path: str, explain: dict, out) -> None:
    """The HTML report prints the explain JSON's step figures, verdict and trust grade."""
    pytest.importorskip("jinja2")
    result = CliRunner().invoke(app, ["explain", path, "--format", "html", "-o", str(out)])
    assert result.exit_code == 0, result.output
    html = out.read_text()
    assert explain["verdict"]["regime"] in html
    assert explain["quality"]["grade"] in html
    for row in explain["steps"]:
        assert fmt_us(row["device_busy_us"]) in html
        assert fmt_us(row["dur_us"]) in html


def test_a_merged_finding_is_one_finding_in_every_format(tmp_path):
    # ResNet-50 without workers: dataloader-bound holds the verdict's data-bound (one wait)
    path = str(corpus("gpu/resnet50_dataloader_workers0.pt.trace.json.gz"))
    explain = _json("explain", path, "--format", "json")
    (wait,) = [f for f in explain["findings"] if {f["id"], *f["merged"]} & {"data-bound"}]
    assert wait["id"] == "dataloader-bound" and wait["merged"] == ["data-bound"]
    saving = f"~{fmt_us(wait['impact_us'])}"
    for fmt in ("text", "md", "html"):
        out = tmp_path / f"report.{fmt}"
        result = CliRunner().invoke(app, ["explain", path, "--format", fmt, "-o", str(out)])
        assert result.exit_code == 0, result.output
        text = out.read_text()
        assert "also data-bound" in text and saving in text, fmt
        assert text.count("dataloader-bound") >= 1
    # the folded finding fired: check sees it, at the survivor's severity
    (outcome,) = run_check(path, ["data-bound"], None, "10%")
    assert outcome.passed
