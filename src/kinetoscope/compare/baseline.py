"""`--baseline report.json --max-regression 10%`: fail CI when a run got slower than a saved one.

Compared per step (lower is better): the median step time, host busy time and
device busy time. Window totals are divided by the step count first, so a
baseline recorded over more steps still compares. A metric the baseline lacks
(device time of a host-only baseline) is left out and said so.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

from ..errors import UsageError
from ..formatting.units import fmt_us
from .expect import Facts, Outcome
from .facts import facts_from_json

#: Per-step costs a regression is measured on (all lower-is-better times).
REGRESSION_METRICS = ("step_time_us", "host_time_per_step_us", "device_busy_per_step_us")


def parse_percent(text: str) -> float:
    """`10%` -> 0.10; anything else is a usage error (exit 2)."""
    m = re.fullmatch(r"\s*(\d+(?:\.\d*)?|\.\d+)\s*%\s*", text)
    if not m:
        raise UsageError(f"--max-regression {text!r}: give a percentage such as 10%")
    return float(m[1]) / 100.0


def load_baseline(path: Path) -> Facts:
    """Facts of a saved `kinetoscope explain --format json` report."""
    try:
        data = json.loads(Path(path).read_text())
    except FileNotFoundError:
        raise UsageError(f"{path}: baseline report not found") from None
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise UsageError(f"{path}: baseline is not a JSON report ({exc})") from None
    if not isinstance(data, dict):
        raise UsageError(f"{path}: baseline is not a JSON report object")
    try:
        return facts_from_json(data)
    except ValueError as exc:
        raise UsageError(f"{path}: {exc}") from None


def regressions(current: Facts, baseline: Facts, max_regression: float) -> list[Outcome]:
    """One outcome per compared metric: passes when current <= baseline * (1 + max)."""
    outcomes = []
    for name in REGRESSION_METRICS:
        _, before = baseline.metric(name)
        _, now = current.metric(name)
        text = f"{name} within {max_regression:.0%} of baseline"
        if not before:
            continue
        if now is None:
            outcomes.append(Outcome(text, False, f"baseline {fmt_us(before, 1)}, not measured now"))
            continue
        change = now / before - 1
        measured = f"{fmt_us(before, 1)} -> {fmt_us(now, 1)} ({change:+.1%})"
        outcomes.append(Outcome(text, change <= max_regression, measured))
    return outcomes
