"""Rule thresholds from a TOML file and `--set rule.key=value`, checked against the registry.

The file has one table per rule id, holding that rule's threshold keys:

    [overhead-bound]
    max_device_ratio = 0.3

`--set` entries are applied after the file. An unknown rule id or key is a
usage error (one line, exit 2) rather than a silently ignored typo, and so is a
value outside what the threshold means: every threshold is a finite,
non-negative number (a NaN compares false with everything and a negative one
flips the test it guards, silently changing the verdict); a share is a
fraction of time, so it lies in [0, 1]; a count (its default is an integer)
is a whole number.
"""

from __future__ import annotations

import difflib
import math
import sys
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from ..errors import UsageError
from .engine import load_rules

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised on 3.10 only
    import tomli as tomllib

Config = dict[str, dict[str, float]]


def load_config(path: str | Path) -> Config:
    path = Path(path)
    try:
        raw = tomllib.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise UsageError(f"{path}: config file not found") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise UsageError(f"{path}: cannot read config file: {exc}") from None
    except tomllib.TOMLDecodeError as exc:
        raise UsageError(f"{path}: not valid TOML: {exc}") from None
    config: Config = {}
    for rule_id, table in raw.items():
        if not isinstance(table, dict):
            raise UsageError(f"{path}: '{rule_id}' must be a table of thresholds, e.g. [{rule_id}]")
        config[rule_id] = dict(table)  # keys checked first, then values (validate_config)
    return validate_config(config, source=str(path))


def apply_sets(config: Config, assignments: Iterable[str]) -> Config:
    """`config` with each `rule.key=value` applied (a new dict; the input is not changed)."""
    out = {rule_id: dict(table) for rule_id, table in config.items()}
    for item in assignments:
        target, sep, value = item.partition("=")
        rule_id, dot, key = target.strip().partition(".")
        if not sep or not dot or not rule_id or not key:
            raise UsageError(f"--set {item!r}: expected rule.key=value, e.g. hotspot.min_share=0.6")
        out.setdefault(rule_id, {})[key] = value.strip()  # a number once its key is known
    return validate_config(out, source="--set")


def validate_config(config: Config, source: str = "config") -> Config:
    """A checked copy of `config`: known rules and keys, values in range."""
    rules = load_rules()
    for rule_id, table in config.items():
        if rule_id not in rules:
            raise UsageError(
                f"{source}: unknown rule '{rule_id}' ({_close(rule_id, rules)}"
                f"known: {', '.join(rules)})"
            )
        known = rules[rule_id].defaults
        for key in table:
            if key not in known:
                have = ", ".join(known) or "none"
                raise UsageError(
                    f"{source}: rule '{rule_id}' has no threshold '{key}' "
                    f"({_close(key, known)}its thresholds: {have})"
                )
    return {
        rule_id: {
            key: _in_range(
                _number(value, f"{source}: {rule_id}.{key}"),
                rules[rule_id].defaults[key],
                key,
                f"{source}: {rule_id}.{key}",
            )
            for key, value in table.items()
        }
        for rule_id, table in config.items()
    }


def _close(name: str, names: Iterable[str]) -> str:
    """'did you mean X? ' for a near miss of one of `names`, else ''."""
    close = difflib.get_close_matches(name, list(names), n=2, cutoff=0.75)
    return f"did you mean {' or '.join(close)}? " if close else ""


def _in_range(value: float, default: float, key: str, where: str) -> float:
    """`value` when it means what threshold `key` means (see the module docstring)."""
    if not math.isfinite(value):
        raise UsageError(f"{where}: must be a finite number, got {value!r}")
    if value < 0:
        raise UsageError(f"{where}: must not be negative, got {value:g}")
    if (key == "share" or key.endswith("_share")) and value > 1:
        raise UsageError(f"{where}: is a share of time, between 0 and 1; got {value:g}")
    if isinstance(default, int) and not value.is_integer():
        raise UsageError(f"{where}: is a count, a whole number; got {value:g}")
    return value


def check_rule_ids(ids: Iterable[str]) -> list[str]:
    rules = load_rules()
    wanted = [i.strip() for i in ids if i.strip()]
    unknown = [i for i in wanted if i not in rules]
    if unknown:
        raise UsageError(
            f"unknown rule '{unknown[0]}' ({_close(unknown[0], rules)}known: {', '.join(rules)})"
        )
    return wanted


def _number(value: Any, where: str) -> float:
    if isinstance(value, bool):
        raise UsageError(f"{where}: expected a number, got {value!r}")
    try:
        return float(value)
    except (TypeError, ValueError):
        raise UsageError(f"{where}: expected a number, got {value!r}") from None
