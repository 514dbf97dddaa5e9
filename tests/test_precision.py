"""The precision suite: every hand-written expectation in tests/expectations/ holds.

One test per judged (trace, rule) pair, so a failure names the trace, the rule
and the reason read from the trace. Every expectation must hold: a must-fire
that stays silent or a must-not-fire that fires is a regression.
"""

from __future__ import annotations

import importlib.util
import sys
from functools import cache

import pytest

from kinetoscope.rules.engine import load_rules

from .conftest import CORPUS, REPO

_spec = importlib.util.spec_from_file_location("precision", REPO / "bench" / "precision.py")
precision = importlib.util.module_from_spec(_spec)
sys.modules["precision"] = precision  # dataclasses look their module up there
_spec.loader.exec_module(precision)

def _cases():
    for file in precision.expectation_files():
        spec = precision.load_expectation(file)
        for check in precision.checks_of(file.stem, spec):
            verb = "fires" if check.must_fire else "silent"
            yield pytest.param(spec, check, id=f"{check.name}:{check.rule}:{verb}")


@cache
def _fired(relative: str) -> frozenset[str]:
    return frozenset(precision.fired_ids(CORPUS / relative))


@pytest.mark.parametrize(("spec", "check"), list(_cases()))
def test_expectation(spec, check):
    path = CORPUS / spec["trace"]
    if not path.exists():
        pytest.skip(f"corpus trace {spec['trace']} not found under {CORPUS}")
    fired = _fired(spec["trace"])
    assert (check.rule in fired) == check.must_fire, check.reason


def test_every_regime_and_id_in_expectations_is_spelled_like_a_rule():
    """A typo in an expectation would make it unjudgeable: every id is a rule the tool has."""
    ids = set(load_rules())
    for file in precision.expectation_files():
        for check in precision.checks_of(file.stem, precision.load_expectation(file)):
            assert check.rule in ids, (file.name, check.rule)


def test_scoring_counts_each_kind():
    checks = [
        precision.Check("t", "a", True, ""),
        precision.Check("t", "b", True, ""),
        precision.Check("t", "c", False, ""),
        precision.Check("t", "d", False, ""),
    ]
    table = precision.score(precision.evaluate(checks, {"a", "c"}))
    assert table["a"]["TP"] == 1 and table["b"]["FN"] == 1
    assert table["c"]["FP"] == 1 and table["d"]["TN"] == 1
