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

#: a saved report is kilobytes (megabytes with every finding's evidence)
MAX_BASELINE_BYTES = 64 << 20
#: Per-step costs a regression is measured on (all lower-is-better times).
REGRESSION_METRICS = ("step_time_us", "host_time_per_step_us", "device_busy_per_step_us")


def parse_percent(text: str) -> float:
    """`10%` -> 0.10; anything else is a usage error (exit 2)."""
    m = re.fullmatch(r"\s*(\d+(?:\.\d*)?|\.\d+)\s*%\s*", text)
    if not m:
        raise UsageError(f"--max-regression {text!r}: give a percentage such as 10%")
    return float(m[1]) / 100.0


def load_baseline(path: Path) -> Facts:
    """Facts of a saved `kinetoscope explain --format json` report.

    Read as hard input, like a trace: at most `MAX_BASELINE_BYTES` (/dev/zero was read
    until memory ran out), and nesting too deep for the decoder or an integer past
    Python's 4,300 digits is one line, not an internal error."""
    try:
        with open(path, "rb") as handle:
            raw = handle.read(MAX_BASELINE_BYTES + 1)
    except FileNotFoundError:
        raise UsageError(f"{path}: baseline report not found") from None
    except OSError as exc:
        raise UsageError(f"{path}: baseline is not a JSON report ({exc.strerror or exc})") from None
    if len(raw) > MAX_BASELINE_BYTES:
        raise UsageError(
            f"{path}: baseline is larger than {MAX_BASELINE_BYTES >> 20} MB: not a saved report"
        )
    try:
        data = json.loads(raw.decode("utf-8"))
    except RecursionError:
        raise UsageError(f"{path}: baseline has values nested too deeply to decode") from None
    except (UnicodeDecodeError, ValueError) as exc:  # JSONDecodeError, the digits limit
        raise UsageError(f"{path}: baseline is not a JSON report ({_short(exc)})") from None
    if not isinstance(data, dict):
        raise UsageError(f"{path}: baseline is not a JSON report object")
    try:
        return facts_from_json(data)
    except ValueError as exc:
        raise UsageError(f"{path}: {exc}") from None


def _short(exc: Exception) -> str:
    text = str(exc)
    return text if len(text) <= 120 else text[:120] + "..."


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
