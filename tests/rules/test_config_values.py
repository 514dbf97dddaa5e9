"""Threshold values are checked for what they mean, naming the key, from TOML and --set."""

from __future__ import annotations

import subprocess
import sys

import pytest

import kinetoscope
from kinetoscope.errors import UsageError
from kinetoscope.rules.config import apply_sets, load_config
from tests.conftest import corpus


@pytest.mark.parametrize(
    "assignment, problem",
    [
        ("overhead-bound.max_device_ratio=nan", "must be a finite number"),
        ("overhead-bound.max_device_ratio=inf", "must be a finite number"),
        ("compute-bound.min_device_ratio=-0.5", "must not be negative"),
        ("hotspot.min_share=1.5", "between 0 and 1"),
        ("call-count.min_calls=2.5", "whole number"),
    ],
)
def test_set_rejects_values_out_of_range_naming_the_key(assignment, problem):
    with pytest.raises(UsageError) as info:
        apply_sets({}, [assignment])
    assert problem in str(info.value)
    assert assignment.split("=")[0] in str(info.value)


@pytest.mark.parametrize("value", ["nan", "inf", "-0.1"])
def test_toml_rejects_non_finite_and_negative(tmp_path, value):
    path = tmp_path / "t.toml"
    path.write_text(f"[overhead-bound]\nmax_device_ratio = {value}\n")
    with pytest.raises(UsageError, match=r"t\.toml: overhead-bound\.max_device_ratio"):
        load_config(path)


def test_valid_values_still_accepted(tmp_path):
    path = tmp_path / "t.toml"
    path.write_text("[hotspot]\nmin_share = 1\n[call-count]\nmin_calls = 50\n")
    assert load_config(path) == {"hotspot": {"min_share": 1.0}, "call-count": {"min_calls": 50.0}}


def test_python_api_config_is_checked_too():
    with pytest.raises(UsageError, match="must not be negative"):
        kinetoscope.explain(
            corpus("gpu/triton_example.json.gz"), {"overhead-bound": {"max_device_ratio": -1}}
        )


def test_cli_nan_threshold_is_one_line_exit_2():
    """`--set overhead-bound.max_device_ratio=nan` used to be accepted and flip the verdict."""
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "kinetoscope",
            "explain",
            str(corpus("gpu/triton_example.json.gz")),
            "--set",
            "overhead-bound.max_device_ratio=nan",
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 2
    assert done.stderr.strip().splitlines() == [
        "kinetoscope: error: --set: overhead-bound.max_device_ratio: "
        "must be a finite number, got nan"
    ]
