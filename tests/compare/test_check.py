"""`check` and `assert_trace`: pass/fail lines, exit codes, baseline regressions.

`check` runs in this process (`run_here`): its lines and exit codes are the point. One
bad-input case runs through `python -m kinetoscope` so the console path stays covered."""

from __future__ import annotations

import pytest

import kinetoscope
from kinetoscope.compare.baseline import load_baseline, parse_percent, regressions
from kinetoscope.errors import UsageError
from kinetoscope.testing import assert_trace, keyword_expression

from ..capture_helpers import run_cli, run_here
from ..conftest import corpus

WORKERS0 = "gpu/resnet50_dataloader_workers0.pt.trace.json.gz"
WORKERS4 = "gpu/resnet50_dataloader_workers4.pt.trace.json.gz"
SMALL = "gpu/tiny_transformer_block_h100.pt.trace.json.gz"


def _check(*args):
    return run_here("check", *args)


def test_each_expectation_prints_measured_value_and_verdict():
    # the H100 transformer block: 3 steps of 16 kernels, median step 860 us
    res = _check(
        corpus(SMALL),
        "-e",
        "kernels_per_step <= 20",
        "-e",
        "step_time_ms <= 0.5",
        "-e",
        "kernels_per_step == 16 and launches_per_step == 16",
        "-e",
        "regime == compute-bound",
        "-e",
        "not overhead-bound",
        "-e",
        "device_busy_ratio < 25%",
    )
    assert res.returncode == 1, res.stderr
    assert res.stdout.splitlines() == [
        "PASS  kernels_per_step <= 20  (measured: kernels_per_step=16)",
        "FAIL  step_time_ms <= 0.5  (measured: step_time_ms=0.86 (860 us))",
        "PASS  kernels_per_step == 16 and launches_per_step == 16  "
        "(measured: kernels_per_step=16, launches_per_step=16)",
        "FAIL  regime == compute-bound  (measured: regime=overhead-bound)",
        "FAIL  not overhead-bound  (measured: overhead-bound present (warn))",
        "PASS  device_busy_ratio < 25%  (measured: device_busy_ratio=0.1343 (13.4%))",
        "3 passed, 3 failed",
    ]


def test_all_pass_exits_zero():
    res = _check(corpus(SMALL), "-e", "regime == overhead-bound", "-e", "not compute-bound")
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
    # through `python -m kinetoscope`: the console path's error mapping, once
    res = run_cli("check", str(tmp_path / "none.json"), "-e", "kernels_per_step < 1")
    assert res.returncode == 2 and "none.json" in res.stderr
    assert res.stderr.count("\n") == 1 and "Traceback" not in res.stderr


def test_baseline_regression(tmp_path):
    fast, slow = corpus(WORKERS4), corpus(WORKERS0)
    fast_json, slow_json = tmp_path / "fast.json", tmp_path / "slow.json"
    fast_json.write_text(kinetoscope.explain(fast).to_json())
    slow_json.write_text(kinetoscope.explain(slow).to_json())
    # workers=4 (median step 126.5 ms) against the workers=0 baseline (176.3 ms): faster
    res = _check(
        fast, "-e", "not dataloader-bound", "--baseline", slow_json, "--max-regression", "10%"
    )
    assert res.returncode == 0, res.stdout
    assert "PASS  not dataloader-bound  (measured: dataloader-bound absent)" in res.stdout
    assert "step_time_us within 10% of baseline" in res.stdout and "(-28.2%)" in res.stdout
    # the other way round it is 39% slower per step: a regression
    res = _check(
        slow, "-e", "not dataloader-bound", "--baseline", fast_json, "--max-regression", "10%"
    )
    assert res.returncode == 1
    assert "FAIL  not dataloader-bound  (measured: dataloader-bound present (critical))" in (
        res.stdout
    )
    assert "FAIL  step_time_us within 10% of baseline" in res.stdout
    # ... that a 50% allowance tolerates
    now, before = load_baseline(slow_json), load_baseline(fast_json)
    assert [o.passed for o in regressions(now, before, 0.5)] == [True, True, True]
    assert [o.passed for o in regressions(now, before, 0.1)] == [False, False, True]


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
    path = corpus(SMALL)
    outcomes = assert_trace(
        path, "step_time_ms < 1", kernels_per_step=16, regime="overhead-bound", mixed=False
    )
    assert [o.passed for o in outcomes] == [True, True, True, True]
    with pytest.raises(AssertionError) as info:
        assert_trace(path, kernels_per_step="<= 5", launches_per_step=16)
    message = str(info.value)
    assert "FAIL  kernels_per_step <= 5  (measured: kernels_per_step=16)" in message
    assert "PASS  launches_per_step == 16" in message
    with pytest.raises(UsageError):
        assert_trace(path, "kernels_per_step <")


def test_a_rule_that_could_not_run_is_not_checked_and_exits_1(tmp_path):
    # the H100 block has no DataLoader ranges: explain lists dataloader-bound under
    # "Not checked", so `not dataloader-bound` cannot pass (it used to: "absent")
    res = _check(corpus(SMALL), "-e", "not dataloader-bound", "-e", "regime == overhead-bound")
    assert res.returncode == 1, res.stdout + res.stderr
    lines = res.stdout.splitlines()
    assert lines[0].startswith("NOT CHECKED  not dataloader-bound  (measured: dataloader-bound ")
    assert "not checked: no enumerate(DataLoader)" in lines[0]
    assert lines[1].startswith("PASS  regime == overhead-bound")
    assert lines[-1].startswith("1 passed, 0 failed, 1 not checked")
    with pytest.raises(AssertionError, match="NOT CHECKED  not dataloader-bound"):
        assert_trace(corpus(SMALL), "not dataloader-bound")
    # the same from a saved report: its not_checked list travels in the JSON
    saved = tmp_path / "small.json"
    saved.write_text(kinetoscope.explain(corpus(SMALL)).to_json())
    facts = load_baseline(saved)
    assert "dataloader-bound" in facts.not_checked


def test_a_rule_that_ran_and_found_nothing_passes():
    # num_workers=4: the DataLoader ranges are there, the rule ran and found no wait
    res = _check(corpus(WORKERS4), "-e", "not dataloader-bound")
    assert res.returncode == 0, res.stdout + res.stderr
    assert res.stdout.splitlines()[0] == (
        "PASS  not dataloader-bound  (measured: dataloader-bound absent)"
    )
