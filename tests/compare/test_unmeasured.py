"""Gates that cannot pass blind (issue 33): an expectation over a metric the trace
cannot measure is NOT CHECKED with the reason, and fails the gate (`check`,
`assert_trace`, the callbacks' `expect=`) unless unmeasured metrics are allowed.

On a CPU-only trace `kernels_per_step <= 5` passed with 0 kernels and
`device_busy_ratio >= 0.5` failed: both read a 0 nobody measured.
"""

from __future__ import annotations

import warnings

import pytest
from typer.testing import CliRunner

from kinetoscope.cli import app
from kinetoscope.integrations.cycle import CycleReader, ExpectationWarning
from kinetoscope.testing import assert_trace

from ..conftest import corpus

CPU = "cpu/cpu_only_rank34.pt.trace.json.gz"
GPU_NO_LOADER = "gpu/tiny_transformer_block_h100.pt.trace.json.gz"
NO_DEVICE = "no device activity in the trace"
NO_LOADER = "no enumerate(DataLoader)#...__next__ ranges in the trace"


def _check(*args: str):
    result = CliRunner().invoke(app, ["check", *map(str, args)])
    return result.exit_code, result.stdout.splitlines()


@pytest.mark.parametrize(
    ("trace", "expression", "reason"),
    [
        (CPU, "kernels_per_step <= 5", NO_DEVICE),
        (CPU, "device_busy_ratio >= 0.5", NO_DEVICE),
        (CPU, "device_busy_per_step_ms < 1", NO_DEVICE),  # an alias of a device time
        (CPU, "data_share <= 10%", NO_LOADER),
        (GPU_NO_LOADER, "data_wait_us == 0", NO_LOADER),
    ],
)
def test_an_unmeasurable_metric_is_not_checked_with_the_reason_and_fails(trace, expression, reason):
    code, lines = _check(corpus(trace), "-e", expression)
    name = expression.split()[0]
    assert lines[0] == f"NOT CHECKED  {expression}  (measured: {name} not measured: {reason})"
    assert code == 1
    code, lines = _check(corpus(trace), "-e", expression, "--allow-unmeasured")
    assert code == 0 and lines[0].startswith("NOT CHECKED")
    assert lines[-1].endswith("1 not checked (the trace cannot tell: see explain's Not checked)")


def test_what_the_trace_measures_is_still_checked():
    # host figures on the CPU trace, device figures where kernels were recorded
    code, lines = _check(corpus(CPU), "-e", "step_time_ms <= 1000", "-e", "launches_per_step == 0")
    assert code == 0 and all(line.startswith("PASS") for line in lines[:2])
    code, lines = _check(corpus(GPU_NO_LOADER), "-e", "kernels_per_step <= 5")
    assert code == 1 and lines[0].startswith("FAIL  kernels_per_step <= 5")
    # a FAIL is a FAIL under --allow-unmeasured
    code, _ = _check(corpus(GPU_NO_LOADER), "-e", "kernels_per_step <= 5", "--allow-unmeasured")
    assert code == 1


def test_the_pytest_helper_fails_on_an_unmeasured_metric_unless_allowed():
    with pytest.raises(AssertionError, match="NOT CHECKED  kernels_per_step <= 5"):
        assert_trace(corpus(CPU), "kernels_per_step <= 5")
    [outcome] = assert_trace(corpus(CPU), "kernels_per_step <= 5", allow_unmeasured=True)
    assert not outcome.checked and NO_DEVICE in outcome.measured


def test_the_callbacks_expect_fails_on_an_unmeasured_metric_unless_allowed():
    lines: list[str] = []
    reader = CycleReader(["kernels_per_step <= 5"], echo=lines.append)
    with pytest.warns(ExpectationWarning, match="1 of 1 expectation"):
        result = reader(corpus(CPU))
    assert [o.status for o in result.failed] == ["NOT CHECKED"]
    assert lines[1] == (
        "kinetoscope: NOT CHECKED  kernels_per_step <= 5  "
        f"(measured: kernels_per_step not measured: {NO_DEVICE})"
    )
    allowed = CycleReader(["kernels_per_step <= 5"], echo=lines.append, allow_unmeasured=True)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert allowed(corpus(CPU)).failed == []
