"""`assert_trace(path, ...)`: the `check` command as a pytest assertion.

    assert_trace("run.json", "kernels_per_step <= 5", regime="compute-bound",
                 device_busy_ratio=">= 80%", dataloader_bound=False)

Positional arguments are expressions in `check`'s language. Keywords are
shorthands: `name="<= 5"` (an operator first) compares, `name="text"` or
`name=number` is equality, and `finding_id=False/True` asserts a finding is
absent/present (underscores stand for the hyphens of finding ids).

An expectation the trace cannot check (NOT CHECKED: a device metric on a CPU-only
trace, `not dataloader-bound` without a DataLoader) fails the assertion, as it
fails `check`, unless `allow_unmeasured=True`.
"""

from __future__ import annotations

import os

from .compare.check import run_check
from .compare.expect import Outcome
from .compare.expression import OPS
from .trace import Trace


def keyword_expression(name: str, value: object) -> str:
    """The expression a keyword expectation stands for."""
    if isinstance(value, bool):
        finding = name.replace("_", "-")
        return finding if value else f"not {finding}"
    if isinstance(value, str) and value.lstrip().startswith(OPS):
        return f"{name} {value.strip()}"
    return f"{name} == {value}"


def assert_trace(
    path_or_trace: str | os.PathLike | Trace,
    *expressions: str,
    baseline: str | os.PathLike | None = None,
    max_regression: str = "10%",
    allow_unmeasured: bool = False,
    **expectations: object,
) -> list[Outcome]:
    """Raise `AssertionError` listing every expectation when any fails (or is not checked,
    unless `allow_unmeasured`); else return outcomes."""
    texts = list(expressions) + [keyword_expression(k, v) for k, v in expectations.items()]
    outcomes = run_check(path_or_trace, texts, baseline, max_regression)
    if not all(o.passed or (allow_unmeasured and not o.checked) for o in outcomes):
        lines = "\n".join(o.line() for o in outcomes)
        raise AssertionError(f"trace expectations failed:\n{lines}")
    return outcomes
