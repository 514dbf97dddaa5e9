"""The precision suite: every hand-written expectation in tests/expectations/ holds.

One test per judged (trace, rule) pair, so a failure names the trace, the rule
and the reason read from the trace. Ids the installed tool does not know yet
(rules landing in parallel work) are xfail(strict=False) with "rule not yet
implemented"; KNOWN_DISAGREEMENTS lists pairs where the current tool is wrong
(see docs/accuracy.md) as strict xfails, so a fix turns them into a failure
that asks for the entry to be deleted.
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

#: (expectation, rule) -> why the current tool gets it wrong; delete an entry when fixed
KNOWN_DISAGREEMENTS = {
    ("alexnet_train", "kernel-variance"): "fires on a 1.36x spread worth 216 us in a 43 s window",
    ("param_linear_train_2080ti", "kernel-variance"): "fires on a 7 us spread",
    ("resnet50_dataloader_workers0", "kernel-variance"): "fires on 0.4% of a step",
    ("tiny_transformer_block_h100", "kernel-variance"): "fires on a 5 us spread",
    ("tracelens_b200__eager_trace", "kernel-variance"): "fires on 0.2% of the window",
    ("tracelens_b200__eager_trace", "host-sync"): ".item() on CPU tensors counted as syncs",
    ("resnet50_dataloader_workers4", "step-outlier"): "silent on a 1.44x step",
    ("tiny_transformer_block_h100", "step-outlier"): "silent on a 1.49x step",
    ("tracelens_torch_compile_triton__trace", "hotspot"): "silent on a 64% GEMM",
}


def _cases():
    known = set(load_rules())
    for file in precision.expectation_files():
        spec = precision.load_expectation(file)
        for check in precision.checks_of(file.stem, spec):
            marks = []
            # a verdict the tool cannot give yet also decides which regime must stay silent
            regime_unknown = check.rule in precision.REGIMES and spec.get("regime") not in known
            if check.rule not in known or regime_unknown:
                marks.append(pytest.mark.xfail(reason="rule not yet implemented", strict=False))
            elif (check.name, check.rule) in KNOWN_DISAGREEMENTS:
                why = KNOWN_DISAGREEMENTS[(check.name, check.rule)]
                marks.append(pytest.mark.xfail(reason=f"known disagreement: {why}", strict=True))
            verb = "fires" if check.must_fire else "silent"
            yield pytest.param(spec, check, marks=marks, id=f"{check.name}:{check.rule}:{verb}")


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
    """A typo in an expectation would make it unjudgeable: every id is a known or announced one."""
    announced = set(precision.REGIMES) | {"optimizer-unfused", "exposed-communication"}
    ids = set(load_rules()) | announced
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
