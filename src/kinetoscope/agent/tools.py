"""The MCP tools' answers: the JSON each CLI command writes, trimmed for an agent.

Every function takes the served root and the tool's arguments, confines paths
with `agent.paths`, and returns plain JSON data. Lists that grow with the trace
(findings, steps, rows, kernels) are cut to the asked `top`/`limit`, and a
`trimmed` entry says what was left out, so an answer never floods a context
window silently. Bad input raises `KinetoscopeError` with the CLI's one line.
"""

from __future__ import annotations

import json
from dataclasses import asdict
from pathlib import Path
from typing import Any

from ..analysis.chain import select_device_events
from ..analysis.memory import memory_timeline
from ..analysis.summary import summarize
from ..analysis.table import SORT_KEYS
from ..api import explain as explain_trace
from ..compare.check import run_check
from ..compare.diff import diff_runs
from ..compare.runs import load_run
from ..errors import UsageError
from ..pipeline.chain_data import chain_data
from ..pipeline.memory_data import memory_data, memory_document
from ..pipeline.summary_data import summary_data
from ..pipeline.table_data import table_data
from ..report.diff_render import to_json as diff_json
from ..rules.memory import RECORD_ADVICE
from ..trace import load
from .paths import readable, writable


def _cut(data: dict, key: str, limit: int, trimmed: dict[str, int]) -> None:
    items = data.get(key)
    if isinstance(items, list) and len(items) > limit:
        trimmed[key] = len(items) - limit
        data[key] = items[:limit]


def explain(root: Path, path: str, top: int = 10, steps: int = 20, step: int | None = None,
            timeline: bool = False) -> dict[str, Any]:  # fmt: skip
    """`kinetoscope explain --format json`, findings cut to `top`, steps to `steps` (or the
    one `step`), the timeline's busy intervals left out unless `timeline`."""
    data = explain_trace(readable(root, path)).to_dict()
    trimmed: dict[str, int] = {}
    if step is not None:
        chosen = [s for s in data["steps"] if s.get("number") == step]
        if not chosen:
            numbers = [str(s["number"]) for s in data["steps"] if s.get("number") is not None]
            have = ", ".join(numbers) or "none: no ProfilerStep#N, leave step out"
            raise UsageError(f"no ProfilerStep#{step} in {path} (steps: {have})")
        trimmed["steps"] = len(data["steps"]) - 1
        data["steps"] = chosen
    else:
        _cut(data, "steps", steps, trimmed)
    _cut(data, "findings", top, trimmed)
    layers = data.get("moe", {}).get("layers", [])
    if len(layers) > steps:  # one row per MoE layer call: layers x steps of a real model
        trimmed["moe.layers"] = len(layers) - steps
        data["moe"]["layers"] = layers[:steps]
    rows = data.get("lines", {}).get("rows", [])
    if len(rows) > top:  # source lines, ranked like the findings
        trimmed["lines.rows"] = len(rows) - top
        data["lines"]["rows"] = rows[:top]
    if not timeline:
        lanes = data["timeline"].get("lanes", {})
        trimmed["timeline.lanes"] = sum(len(v) for v in lanes.values())
        data["timeline"]["lanes"] = {}
    data["trimmed"] = trimmed
    return data


def summary(root: Path, path: str) -> dict[str, Any]:
    """`kinetoscope summary --format json`."""
    return summary_data(summarize(load(readable(root, path))))


def table(root: Path, path: str, sort_by: str = "", row_limit: int = 20) -> dict[str, Any]:
    """`kinetoscope table --format json --row-limit N`."""
    if sort_by and sort_by not in SORT_KEYS:
        raise UsageError(f"unknown sort_by {sort_by!r}; choose from {', '.join(SORT_KEYS)}")
    return table_data(load(readable(root, path)), sort_by, row_limit)


def diff(root: Path, a: str, b: str, top: int = 20) -> dict[str, Any]:
    """`kinetoscope diff --format json`, each list cut to `top` rows."""
    result = diff_runs(load_run(readable(root, a)), load_run(readable(root, b)))
    data = json.loads(diff_json(result))
    trimmed: dict[str, int] = {}
    for key, value in list(data.items()):
        if isinstance(value, list):
            _cut(data, key, top, trimmed)
    data["trimmed"] = trimmed
    return data


def check(root: Path, path: str, expect: list[str]) -> dict[str, Any]:
    """`kinetoscope check -e ...`: each expectation with what was measured."""
    if not expect:
        raise UsageError("give at least one expectation, e.g. 'kernels_per_step <= 50'")
    outcomes = run_check(readable(root, path), list(expect))
    return {
        "passed": all(o.passed for o in outcomes),
        "outcomes": [
            {"text": o.text, "passed": o.passed, "measured": o.measured} for o in outcomes
        ],
    }


def chain(root: Path, path: str, kernel: str | None = None, op: str | None = None,
          step: int | None = None, limit: int = 20) -> dict[str, Any]:  # fmt: skip
    """`kinetoscope chain` as a tree: step -> annotations -> ops -> launch -> kernel."""
    if kernel is not None and op is not None:
        raise UsageError("give kernel or op, not both")
    trace = load(readable(root, path))
    return chain_data(trace, select_device_events(trace, kernel=kernel, op=op, step=step), limit)


def memory(root: Path, path: str, top: int = 10, steps: int = 20) -> dict[str, Any]:
    """`kinetoscope memory`: per device the peak and its op, largest allocations, churn."""
    trace = load(readable(root, path))
    devices = memory_timeline(trace, top=top)
    if not devices:
        raise UsageError(f"{path}: no [memory] events in the trace; {RECORD_ADVICE}")
    return memory_data(memory_document(trace, devices), steps)


def slice_(root: Path, path: str, output: str, steps: str | None = None,
           window: str | None = None, drop: list[str] | None = None) -> dict[str, Any]:  # fmt: skip
    """`kinetoscope slice -o OUTPUT`: a new file under the root, never over an existing one
    (`OUTPUT_2`, ... then)."""
    from ..slicing import Selection, parse_steps, parse_window, slice_trace

    if (steps is None) == (window is None):
        raise UsageError("give exactly one of steps and window")
    source = readable(root, path)
    target = writable(root, output)
    selection = Selection(
        steps=parse_steps(steps) if steps is not None else None,
        window=parse_window(window) if window is not None else None,
        drop=frozenset(drop or ()),
    )
    result = slice_trace(source, selection, target, force=False)
    data = asdict(result)
    data["source"] = str(Path(result.source).relative_to(root))
    data["output"] = str(Path(result.output).relative_to(root))
    return data
