"""A damaged `check --baseline` report is one line and exit 2 (issue 36): it was a
RecursionError (10k-deep nesting), an AttributeError (`"verdict": ["x"]`), a ValueError
(a 5,000-digit integer) or an OverflowError (a 400-digit metric), and /dev/zero was read
until memory ran out."""

from __future__ import annotations

import json
import os

import pytest

from tests.commands.test_hard_input import EVENTS, cli
from tests.conftest import write_trace

GOOD = {
    "kinetoscope": "x",
    "schema_version": 2,
    "verdict": {"regime": "compute-bound"},
    "metrics": {"step_time_us": 50.0, "steps": 2},
    "findings": [],
    "not_checked": [],
}


def _text(change: str) -> str:
    doc = json.loads(json.dumps(GOOD))
    if change == "deep":
        return json.dumps(doc)[:-1] + ', "x": ' + "[" * 10_000 + "]" * 10_000 + "}"
    if change == "digits_5000":
        return json.dumps(doc).replace("50.0", "9" * 5000)
    if change == "digits_400":
        return json.dumps(doc).replace("50.0", "9" * 400)
    if change == "verdict_list":
        doc["verdict"] = ["x"]
    elif change == "regime_list":
        doc["verdict"] = {"regime": ["x"]}
    elif change == "findings_number":
        doc["findings"] = 5
    elif change == "finding_id_list":
        doc["findings"] = [{"id": ["a"], "severity": "warn"}]
    elif change == "severity_object":
        doc["findings"] = [{"id": "a", "severity": {"b": 1}}]
    elif change == "merged_objects":
        doc["findings"] = [{"id": "a", "severity": "warn", "merged": [{"c": 1}]}]
    elif change == "not_checked_number":
        doc["not_checked"] = 7
    elif change == "steps_list":
        doc["metrics"]["steps"] = [1]
    return json.dumps(doc)


CHANGES = ["deep", "digits_5000", "digits_400", "verdict_list", "regime_list",
           "findings_number", "finding_id_list", "severity_object", "merged_objects",
           "not_checked_number", "steps_list"]  # fmt: skip


@pytest.mark.parametrize("change", CHANGES)
def test_a_damaged_baseline_is_one_line_exit_2_or_read(tmp_path, capsys, change):
    trace = write_trace(tmp_path / "t.json", EVENTS)
    baseline = tmp_path / "baseline.json"
    baseline.write_text(_text(change))
    code, _, err = cli("check", trace, "--baseline", baseline, capsys=capsys)
    assert "internal error" not in err, err
    assert err.count("\n") <= 1, err
    assert code in (0, 1, 2), err
    if change in ("deep", "digits_5000"):
        assert code == 2 and str(baseline) in err, err


def test_dev_zero_as_a_baseline_is_refused_at_once(tmp_path, capsys):
    if not os.path.exists("/dev/zero"):
        pytest.skip("no /dev/zero here")
    trace = write_trace(tmp_path / "t.json", EVENTS)
    code, _, err = cli("check", trace, "--baseline", "/dev/zero", capsys=capsys)
    assert code == 2 and err.count("\n") == 1 and "/dev/zero" in err, err
