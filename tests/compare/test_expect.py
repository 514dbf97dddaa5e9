"""The expectation language: parsing, units, finding presence, and clear errors."""

from __future__ import annotations

import pytest

from kinetoscope.compare.expect import Facts, check, check_all
from kinetoscope.compare.expression import (
    BoolOp,
    Compare,
    ExpressionError,
    Not,
    Present,
    parse,
    tokenize,
)

FACTS = Facts(
    metrics={
        "kernels_per_step": 3.0,
        "device_busy_ratio": 0.85,
        "step_time_us": 11_500.0,
        "host_time_us": 900.0,
        "launches_per_step": None,
    },
    regime="compute-bound",
    findings={"kernel-gap": "warn"},
    known_ids=frozenset({"kernel-gap", "dataloader-bound", "compute-bound", "overhead-bound"}),
)


def test_parse_builds_the_tree():
    assert parse("kernels_per_step <= 5") == Compare("kernels_per_step", "<=", 5.0)
    assert parse("step_time_us<12ms") == Compare("step_time_us", "<", 12.0, "ms")
    assert parse("device_busy_ratio >= 80 %") == Compare("device_busy_ratio", ">=", 80.0, "%")
    assert parse("regime == compute-bound") == Compare("regime", "==", "compute-bound")
    assert parse("not dataloader-bound") == Not(Present("dataloader-bound"))
    assert parse("a > 1 and b < 2 or c") == BoolOp(
        "or", (BoolOp("and", (Compare("a", ">", 1.0), Compare("b", "<", 2.0))), Present("c"))
    )
    assert parse("not (a > 1 or b)") == Not(BoolOp("or", (Compare("a", ">", 1.0), Present("b"))))


@pytest.mark.parametrize(
    ("text", "passed", "measured"),
    [
        ("kernels_per_step <= 5", True, "kernels_per_step=3"),
        ("kernels_per_step > 3", False, "kernels_per_step=3"),
        ("device_busy_ratio >= 0.8", True, "device_busy_ratio=0.85 (85.0%)"),
        ("device_busy_ratio >= 90%", False, "device_busy_ratio=0.85 (85.0%)"),
        ("step_time_ms <= 12", True, "step_time_ms=11.5 (11.5 ms)"),
        ("step_time_ms <= 11", False, "step_time_ms=11.5 (11.5 ms)"),
        ("step_time_us <= 11ms", False, "step_time_us=11500 (11.5 ms)"),
        ("step_time_s < 0.02", True, "step_time_s=0.0115 (11.5 ms)"),
        ("regime == compute-bound", True, "regime=compute-bound"),
        ("regime != compute-bound", False, "regime=compute-bound"),
        ("not dataloader-bound", True, "dataloader-bound absent"),
        ("not kernel-gap", False, "kernel-gap present (warn)"),
        ("compute-bound", True, "regime is compute-bound"),
        ("not overhead-bound", True, "overhead-bound absent"),
        (
            "kernels_per_step < 2 or host_time_us < 1ms",
            True,
            "kernels_per_step=3, host_time_us=900 (900 us)",
        ),
        (
            "kernels_per_step < 5 and kernel-gap",
            True,
            "kernels_per_step=3, kernel-gap present (warn)",
        ),
    ],
)
def test_evaluate(text, passed, measured):
    outcome = check(text, FACTS)
    assert (outcome.passed, outcome.measured) == (passed, measured)
    assert outcome.checked
    assert outcome.line().startswith("PASS" if passed else "FAIL")


#: The same trace, but its dataloader-bound rule could not run (no DataLoader ranges).
UNRUN = Facts(
    metrics=FACTS.metrics,
    regime=FACTS.regime,
    findings=FACTS.findings,
    known_ids=FACTS.known_ids,
    not_checked={"dataloader-bound": "no enumerate(DataLoader)#...__next__ ranges"},
)


@pytest.mark.parametrize(
    ("text", "checked", "passed"),
    [
        # the rule never looked: its absence proves nothing, either way
        ("not dataloader-bound", False, False),
        ("dataloader-bound", False, False),
        ("not (not dataloader-bound)", False, False),
        # a metric the trace does not measure (was FAIL; `not` of it PASSed)
        ("launches_per_step < 10", False, False),
        ("not launches_per_step < 10", False, False),
        # Kleene: a known part decides where it can
        ("not dataloader-bound or kernel-gap", True, True),
        ("not dataloader-bound and not kernel-gap", True, False),
        ("not dataloader-bound and kernel-gap", False, False),
        ("not dataloader-bound or not kernel-gap", False, False),
    ],
)
def test_a_rule_that_did_not_run_is_not_checked(text, checked, passed):
    outcome = check(text, UNRUN)
    assert (outcome.checked, outcome.passed) == (checked, passed)
    if not checked:
        assert outcome.line().startswith("NOT CHECKED")
        assert "not checked" in outcome.measured or "not measured" in outcome.measured


def test_a_rule_that_ran_and_found_nothing_passes():
    # the same expectation where the rule could run: absent means absent
    outcome = check("not dataloader-bound", FACTS)
    assert (outcome.checked, outcome.passed) == (True, True)


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("", "empty expression"),
        ("kernels_per_step <=", "expected a number or a name"),
        ("kernels_per_step <= 5 5", "unexpected '5'"),
        ("(kernels_per_step <= 5", "missing ')'"),
        ("kernels_per_step = 5", "(compare with ==)"),
        ("__import__('os').system('x')", "unexpected"),
        ("kernel_per_step <= 5", "unknown metric 'kernel_per_step'"),
        ("not dataloder-bound", "unknown finding or regime 'dataloder-bound'"),
        ("regime >= compute-bound", "regime only compares with == or !="),
        ("regime == compute-bund", "unknown regime 'compute-bund'"),
        ("kernels_per_step <= fast", "compare it with a number"),
        ("kernels_per_step <= 5%", "% only applies to ratios"),
        ("kernels_per_step <= 5ms", "is not a time"),
        ("and", "expected a metric or finding name"),
    ],
)
def test_bad_expressions_name_the_problem(text, problem):
    with pytest.raises(ExpressionError) as info:
        check(text, FACTS)
    assert problem in str(info.value)
    assert info.value.exit_code == 2


def test_check_all_rejects_before_measuring():
    with pytest.raises(ExpressionError, match="nope"):
        check_all(["kernels_per_step <= 5", "nope > 1"], FACTS)


@pytest.mark.parametrize(
    "text",
    [
        "(" * 5000 + "kernels_per_step <= 5" + ")" * 5000,
        "not " * 5000 + "dataloader-bound",
        "not (" * 2000 + "dataloader-bound" + ")" * 2000,
    ],
)
def test_deep_nesting_is_a_one_line_error(text):
    """Each level costs a Python frame in the parser and the evaluator: past
    MAX_DEPTH the answer is a usage error, not a RecursionError (exit 1)."""
    with pytest.raises(ExpressionError, match="nested more than 64 levels") as info:
        check(text, FACTS)
    assert "\n" not in str(info.value) and len(str(info.value)) < 300


def test_nesting_up_to_the_limit_is_accepted():
    text = "(" * 64 + "kernels_per_step <= 5" + ")" * 64
    assert check(text, FACTS).passed == check("kernels_per_step <= 5", FACTS).passed


@pytest.mark.parametrize("tail", ["a", "ms5", ""])
def test_a_20000_digit_number_is_tokenized_in_one_pass(tail):
    """A number followed by a letter used to make the regex retry every split of
    its digits (seconds for thousands of digits); now one greedy match decides.
    An enormous number followed by nothing is a clear out-of-range error."""
    with pytest.raises(ExpressionError) as info:
        check("kernels_per_step <= " + "1" * 20000 + tail, FACTS)
    assert "unexpected" in str(info.value) or "out of range" in str(info.value)
    assert len(str(info.value)) < 300


def test_units_after_numbers_still_split_the_same_way():
    tokens = tokenize("step_time_us <= 5 sx and a<=5ms")
    assert [(t.kind, t.text, t.unit) for t in tokens[:5]] == [
        ("name", "step_time_us", None),
        ("op", "<=", None),
        ("num", "5", None),
        ("name", "sx", None),
        ("kw", "and", None),
    ]
    assert (tokens[-2].text, tokens[-2].unit) == ("5", "ms")
