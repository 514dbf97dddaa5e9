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
from .precision_traces import precision_traces  # noqa: F401 - fixture

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


def _text(*args: str) -> str:
    result = CliRunner().invoke(app, list(args))
    assert result.exit_code == 0, result.output
    return " ".join(result.stdout.split())  # the renderer wraps lines


def test_cpu_compute_share_is_one_number(precision_traces, tmp_path):  # noqa: F811
    """A CPU run's compute share: explain's text and JSON, its verdict's number, summary,
    check, the HTML report and a sweep row print the same figure."""
    from kinetoscope.compare.sweep import measure
    from kinetoscope.compare.sweep_table import table_rows
    from kinetoscope.trace import load
    from kinetoscope.units import fmt_pct, fmt_share

    path = str(precision_traces["matmul_1024"])
    explain = _json("explain", path, "--format", "json")
    m = explain["metrics"]
    share = m["compute_share"]
    assert share >= 0.8 and explain["verdict"]["regime"] == "compute-bound"
    assert explain["verdict"]["ratio"] == pytest.approx(share)
    assert explain["verdict"]["decomposition"]["compute_share"] == pytest.approx(share)
    text = _text("explain", path)
    assert f"compute {fmt_pct(share)}" in text and f"= {fmt_pct(share)} of the" in text
    assert _json("summary", path, "--format", "json")["metrics"]["compute_share"] == (
        pytest.approx(share, abs=1e-4)
    )
    outcomes = run_check(
        path,
        [f"compute_share >= {share - 1e-4}", f"compute_share <= {share + 1e-4}"],
    )
    assert all(o.passed for o in outcomes), [o.line() for o in outcomes]
    point = measure(load(path), 1024.0)
    # the JSON rounds to 4 decimals; the sweep row holds the unrounded figure
    assert point.compute_share == pytest.approx(share, abs=1e-4)
    assert point.compute_us == pytest.approx(m["compute_us"], abs=1e-3)
    assert point.regime == "compute-bound"
    headers, rows = table_rows("size", [point])
    assert rows[0][headers.index("compute %")] == fmt_pct(share)
    assert rows[0][headers.index("compute/step")] == fmt_us(m["compute_us"], 1)
    pytest.importorskip("jinja2")
    out = tmp_path / "r.html"
    CliRunner().invoke(app, ["explain", path, "--format", "html", "-o", str(out)])
    html = out.read_text()
    assert '<span class="part compute"' in html
    assert f'title="compute {fmt_share(share)}"' in html


def test_sync_wait_from_blocking_copies_is_one_number(tmp_path):
    """dlrm rank 0: a 880 us cudaMemcpyAsync into pageable memory (under aten::to) and a
    1,078 us cudaStreamSynchronize in its one step: both are sync wait, in the text and
    JSON decomposition, the step row, host-sync's blocked time and check."""
    from kinetoscope.analysis.syncs import sync_sites
    from kinetoscope.trace import load

    path = str(corpus("multirank/dlrm_8ranks/worker0_step_12.1694128201545.pt.trace.json.gz"))
    trace = load(path)
    copies = [
        c
        for s in sync_sites(trace)
        for c in s.calls
        if trace.name(c) == "cudaMemcpyAsync" and trace.dur[c] == 880.0
    ]
    assert len(copies) == 1  # the pageable device-to-host copy is a wait
    explain = _json("explain", path, "--format", "json")
    m = explain["metrics"]
    [step] = explain["steps"]
    assert step["sync_wait_us"] == pytest.approx(m["sync_wait_us"])
    assert m["sync_wait_us"] >= 880.0 + 1078.0
    assert m["sync_share"] == pytest.approx(m["sync_wait_us"] / m["window_us"], abs=1e-4)
    assert f"sync wait {100 * m['sync_share']:.1f}%" in _text("explain", path)
    host_sync = next(f for f in explain["findings"] if f["id"] == "host-sync")
    assert host_sync["measured"]["blocked_us"] == pytest.approx(m["sync_wait_us"], abs=0.1)
    share = round(m["sync_share"], 4)
    outcomes = run_check(path, [f"sync_share >= {share - 1e-3}", f"sync_share <= {share + 1e-3}"])
    assert all(o.passed for o in outcomes), [o.line() for o in outcomes]
