"""`kinetoscope.explain(path_or_trace) -> Report`: the main job, from Python."""

from __future__ import annotations

import os
from collections.abc import Iterable

from .pipeline.build import build_report
from .report.model import Report
from .rules.config import Config, check_rule_ids, validate_config
from .trace import Trace, load


def explain(
    path_or_trace: str | os.PathLike | Trace,
    config: Config | None = None,
    rules: Iterable[str] | None = None,
    *,
    max_memory: str | int | None = "auto",
    spill_dir: str | os.PathLike | None = None,
) -> Report:
    """Read a trace like an expert: verdict, steps, metrics, ranked findings.

    `config` maps rule ids to threshold overrides (`{"hotspot": {"min_share": 0.6}}`);
    `rules` limits the run to those rule ids. Unknown ids or keys raise `UsageError`.
    `max_memory` and `spill_dir` choose how a path is loaded (see `load`): a
    budget such as `"2GB"` or bytes, or `"auto"` (the RAM available); the results
    are the same, and a trace whose analyses would need more is refused (`OverBudget`).
    """
    config = validate_config(dict(config or {}), source="config")
    only = check_rule_ids(rules) if rules is not None else None
    if isinstance(path_or_trace, Trace):
        trace = path_or_trace
    else:
        trace = load(path_or_trace, max_memory=max_memory, spill_dir=spill_dir)
    return build_report(trace, config, only)
