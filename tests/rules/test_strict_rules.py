"""Strict rules (`KINETOSCOPE_STRICT_RULES`): a crashing rule fails, not "not checked".

Without it a rule that raises is reported as "rule failed" and the report goes on,
which is right for a user and wrong for a test: a test that expects a rule to stay
silent would pass when the rule crashed. `tests/conftest.py` turns it on for the suite.
"""

from __future__ import annotations

import os

import pytest

import kinetoscope
from kinetoscope.rules import base
from kinetoscope.rules.engine import STRICT_ENV, load_rules, run_rules

from ..conftest import corpus

CPU = "cpu/cpu_only_rank34.pt.trace.json.gz"


@pytest.fixture
def crashing_rule():
    """A registered rule that raises; removed again after the test."""
    load_rules()

    @base.rule("test-crashing", "test", "always raises")
    def _crashing(ctx):
        raise ZeroDivisionError("on purpose")

    yield "test-crashing"
    del base.REGISTRY["test-crashing"]


def test_the_suite_runs_in_strict_mode():
    assert os.environ.get(STRICT_ENV) == "1"


def test_strict_mode_lets_a_crashing_rule_fail(crashing_rule):
    trace = kinetoscope.load(corpus(CPU))
    with pytest.raises(ZeroDivisionError, match="on purpose"):
        run_rules(trace, only=[crashing_rule])
    with pytest.raises(ZeroDivisionError, match="on purpose"):
        kinetoscope.explain(trace)


@pytest.mark.parametrize("value", [None, "", "0"])
def test_without_strict_mode_a_crashing_rule_is_not_checked(crashing_rule, monkeypatch, value):
    if value is None:
        monkeypatch.delenv(STRICT_ENV, raising=False)
    else:
        monkeypatch.setenv(STRICT_ENV, value)
    report = kinetoscope.explain(kinetoscope.load(corpus(CPU)))
    skipped = {s.id: s for s in report.not_checked}
    assert skipped[crashing_rule].reason == "rule failed: ZeroDivisionError: on purpose"
    assert report.verdict.regime  # the rest of the report is there


def test_a_rule_that_declines_is_not_checked_in_strict_mode_too():
    """`NotChecked` is a rule saying what it cannot check, not a crash: strict mode keeps it."""
    report = kinetoscope.explain(kinetoscope.load(corpus(CPU)))
    assert report.not_checked
    assert not any(s.reason.startswith("rule failed") for s in report.not_checked)
