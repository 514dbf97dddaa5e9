"""Every JSON writer produces strict JSON: no NaN/Infinity, parsed with a parser
that refuses them, and a non-finite figure is null with a recorded reason."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

import kinetoscope
from kinetoscope.formatting.jsontext import NON_FINITE_KEY, dumps
from tests.conftest import corpus


def _refuse(constant: str):
    raise ValueError(f"non-standard JSON constant {constant}")


def strict_loads(text: str):
    return json.loads(text, parse_constant=_refuse)


def test_dumps_replaces_non_finite_figures_with_null_and_says_which():
    value = {"a": math.nan, "b": [1.0, math.inf, np.float64(-np.inf)], "c": np.int64(3)}
    data = strict_loads(dumps(value))
    assert data["a"] is None and data["b"] == [1.0, None, None] and data["c"] == 3
    assert data[NON_FINITE_KEY] == [
        {"path": "a", "value": "NaN"},
        {"path": "b[1]", "value": "Infinity"},
        {"path": "b[2]", "value": "-Infinity"},
    ]


def test_dumps_of_finite_data_adds_nothing():
    assert strict_loads(dumps({"x": 1.5, "y": [np.float32(2.0)]})) == {"x": 1.5, "y": [2.0]}


def test_report_json_with_nan_metrics_is_strict(tmp_path):
    """A real report whose figures turned NaN (e.g. 0/0 on an empty window) used to
    print `NaN`, which jq and every JSON parser outside Python reject."""
    report = kinetoscope.explain(corpus("gpu/triton_example.json.gz"))
    name = next(iter(report.metrics))
    report.metrics[name] = math.nan
    report.verdict.ratio = math.inf
    data = strict_loads(report.to_json())
    assert data["metrics"][name] is None
    assert data["verdict"]["ratio"] is None
    assert {"path": f"metrics.{name}", "value": "NaN"} in data[NON_FINITE_KEY]


@pytest.mark.parametrize("fmt", ["json"])
def test_cli_json_outputs_parse_strictly(fmt):
    from typer.testing import CliRunner

    from kinetoscope.cli import app

    trace = str(corpus("gpu/compare_base.json.gz"))
    other = str(corpus("gpu/compare_test.json.gz"))
    runner = CliRunner()
    for args in (
        ["explain", trace, "--format", fmt],
        ["summary", trace, "--format", fmt],
        ["table", trace, "--format", fmt],
        ["diff", trace, other, "--format", fmt],
    ):
        done = runner.invoke(app, args)
        assert done.exit_code == 0, (args, done.output)
        strict_loads(done.stdout)
