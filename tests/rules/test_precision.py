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

from ..conftest import CORPUS, REPO
from ..precision_traces import precision_traces  # noqa: F401 - fixture

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
def _fired(path) -> frozenset[str]:
    return frozenset(precision.fired_ids(path))


@pytest.fixture
def recorded(request, spec):
    """The session's recorded traces, only for an expectation that names one (recording
    needs torch; a corpus expectation must not skip for want of it)."""
    return request.getfixturevalue("precision_traces") if "recorded" in spec else None


@pytest.mark.parametrize(("spec", "check"), list(_cases()))
def test_expectation(spec, check, recorded):
    path = precision.trace_path(spec, recorded)
    if not path.exists():
        pytest.skip(f"corpus trace {spec['trace']} not found under {CORPUS}")
    fired = _fired(path)
    assert (check.rule in fired) == check.must_fire, check.reason


def test_compilation_ranks_first_in_a_compile_window(precision_traces):  # noqa: F811
    """The compile itself is the first thing to read about a window it fills."""
    import kinetoscope

    report = kinetoscope.explain(precision_traces["compile_window"])
    assert report.verdict.regime == "compile-window"
    assert report.findings[0].id == "compilation-in-window"


def test_every_recorded_expectation_names_a_recorded_trace():
    from ..precision_traces import NAMES

    for file in precision.expectation_files():
        spec = precision.load_expectation(file)
        assert ("recorded" in spec) != ("trace" in spec), file.name
        if "recorded" in spec:
            assert spec["recorded"] in NAMES, file.name


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
