"""`check` and `assert_trace`: pass/fail lines, exit codes, baseline regressions."""

from __future__ import annotations

import subprocess
import sys

import pytest

import kinetoscope
from kinetoscope.compare.baseline import parse_percent
from kinetoscope.errors import UsageError
from kinetoscope.testing import assert_trace, keyword_expression

from ..conftest import corpus

WORKERS0 = "gpu/resnet50_dataloader_workers0.pt.trace.json.gz"
WORKERS4 = "gpu/resnet50_dataloader_workers4.pt.trace.json.gz"
SMALL = "gpu/tiny_transformer_block_h100.pt.trace.json.gz"


def _check(*args):
    return subprocess.run(
        [sys.executable, "-m", "kinetoscope", "check", *map(str, args)],
        capture_output=True,
        text=True,
    )


def test_each_expectation_prints_measured_value_and_verdict():
    # workers0: 1462 kernels in each of its 6 steps, median step 176.273 ms
    res = _check(
        corpus(WORKERS0),
        "-e",
        "kernels_per_step <= 1500",
        "-e",
        "step_time_ms <= 150",
        "-e",
        "kernels_per_step == 1462 and launches_per_step == 1462",
    )
    assert res.returncode == 1, res.stderr
    lines = res.stdout.splitlines()
    assert lines[0] == "PASS  kernels_per_step <= 1500  (measured: kernels_per_step=1462)"
    assert lines[1] == "FAIL  step_time_ms <= 150  (measured: step_time_ms=176.3)"
    assert lines[2].startswith("PASS")
    assert lines[-1] == "2 passed, 1 failed"


def test_all_pass_exits_zero_and_regime_and_findings():
    report = kinetoscope.explain(corpus(WORKERS0))
    regime = report.verdict.regime
    other = next(r for r in ("compute-bound", "overhead-bound", "mixed") if r != regime)
    res = _check(corpus(WORKERS0), "-e", f"regime == {regime}", "-e", f"not {other}")
    assert res.returncode == 0, res.stdout + res.stderr
    assert res.stdout.splitlines()[-1] == "2 passed, 0 failed"


@pytest.mark.parametrize(
    "expr",
    ["kernels_per_step <=", "kernels_per_step => 5", "no_such_metric > 1", "not no-such-finding"],
)
def test_bad_expressions_exit_2_with_one_line(expr):
    res = _check(corpus(SMALL), "-e", expr)
    assert res.returncode == 2
    assert res.stderr.count("\n") == 1 and "bad expectation" in res.stderr
    assert "Traceback" not in res.stderr


def test_nothing_to_check_and_bad_trace_exit_2(tmp_path):
    assert _check(corpus(SMALL)).returncode == 2
    res = _check(tmp_path / "none.json", "-e", "kernels_per_step < 1")
    assert res.returncode == 2 and "none.json" in res.stderr


def test_baseline_regression(tmp_path):
    fast, slow = corpus(WORKERS4), corpus(WORKERS0)
    fast_json, slow_json = tmp_path / "fast.json", tmp_path / "slow.json"
    fast_json.write_text(kinetoscope.explain(fast).to_json())
    slow_json.write_text(kinetoscope.explain(slow).to_json())
    # workers=4 (median step 126.5 ms) against the workers=0 baseline (176.3 ms): faster
    res = _check(fast, "--baseline", slow_json, "--max-regression", "10%")
    assert res.returncode == 0, res.stdout
    assert "step_time_us within 10% of baseline" in res.stdout and "(-28.2%)" in res.stdout
    # the other way round it is 39% slower per step: a regression
    res = _check(slow, "--baseline", fast_json, "--max-regression", "10%")
    assert res.returncode == 1
    assert "FAIL  step_time_us within 10% of baseline" in res.stdout
    # ... that a 50% allowance tolerates
    assert _check(slow, "--baseline", fast_json, "--max-regression", "50%").returncode == 0


def test_bad_baseline_and_limit_exit_2(tmp_path):
    trace = corpus(WORKERS0)
    res = _check(trace, "--baseline", trace)  # a gzip trace, not a JSON report
    assert res.returncode == 2 and "baseline is not a JSON report" in res.stderr
    res = _check(trace, "--baseline", tmp_path / "missing.json")
    assert res.returncode == 2 and "baseline report not found" in res.stderr
    (tmp_path / "x.json").write_text('{"metrics": {"step_time_us": 1}}')
    res = _check(trace, "--baseline", tmp_path / "x.json", "--max-regression", "ten")
    assert res.returncode == 2 and "percentage" in res.stderr


def test_parse_percent():
    assert parse_percent("10%") == pytest.approx(0.10)
    assert parse_percent(" 2.5 % ") == pytest.approx(0.025)
    with pytest.raises(UsageError):
        parse_percent("0.1")


def test_keyword_shorthands():
    assert keyword_expression("kernels_per_step", "<= 5") == "kernels_per_step <= 5"
    assert keyword_expression("regime", "compute-bound") == "regime == compute-bound"
    assert keyword_expression("dataloader_bound", False) == "not dataloader-bound"
    assert keyword_expression("mixed", True) == "mixed"
    assert keyword_expression("kernels_per_step", 1462) == "kernels_per_step == 1462"


def test_assert_trace_passes_and_fails_with_every_line():
    path = corpus(WORKERS0)
    outcomes = assert_trace(path, "step_time_ms < 200", kernels_per_step=1462)
    assert [o.passed for o in outcomes] == [True, True]
    with pytest.raises(AssertionError) as info:
        assert_trace(path, kernels_per_step="<= 5", launches_per_step=1462)
    message = str(info.value)
    assert "FAIL  kernels_per_step <= 5  (measured: kernels_per_step=1462)" in message
    assert "PASS  launches_per_step == 1462" in message
    with pytest.raises(UsageError):
        assert_trace(path, "kernels_per_step <")
