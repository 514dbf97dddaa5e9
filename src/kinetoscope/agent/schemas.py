"""The output schemas the MCP tools publish: the top level of each JSON answer.

Each is the shape documented for the CLI's JSON (docs/report-schema.md for
`explain`), one level deep: enough for an agent to know which keys exist and
what they hold. Deeper levels stay open (`additionalProperties`), so a report
that gains a field in a minor schema version still validates.
"""

from __future__ import annotations

from typing import Any

OBJ: dict[str, Any] = {"type": "object"}
LIST: dict[str, Any] = {"type": "array"}
NUM: dict[str, Any] = {"type": "number"}
STR: dict[str, Any] = {"type": "string"}
BOOL: dict[str, Any] = {"type": "boolean"}
TRIMMED: dict[str, Any] = {
    "type": "object",
    "description": "how many entries of each list were left out to keep the answer small",
    "additionalProperties": {"type": "integer"},
}


def _obj(description: str, properties: dict[str, Any], required: list[str]) -> dict[str, Any]:
    return {
        "type": "object",
        "description": description,
        "properties": properties,
        "required": required,
        "additionalProperties": True,
    }


SCHEMAS: dict[str, dict[str, Any]] = {
    "explain": _obj(
        "kinetoscope explain --format json (docs/report-schema.md), lists trimmed",
        {
            "kinetoscope": STR,
            "schema_version": {"type": "integer"},
            "trace": OBJ,
            "verdict": {**OBJ, "description": "regime, summary, host/device time, shares"},
            "steps": LIST,
            "metrics": OBJ,
            "statistics": OBJ,
            "findings": {**LIST, "description": "ranked by severity, then time a fix saves"},
            "not_checked": LIST,
            "rules": LIST,
            "timeline": OBJ,
            "quality": OBJ,
            "kernel_types": OBJ,
            "streams": OBJ,
            "communication": OBJ,
            "llm": OBJ,
            "moe": {**OBJ, "description": "MoE parts, dense/sparse dispatch, expert loads"},
            "kernels": {
                **OBJ,
                "description": "kernel view: launch config, est. occupancy, Tensor Core share",
            },
            "lines": {**OBJ, "description": "source lines by window time per account class"},
            "trimmed": TRIMMED,
        },  # fmt: skip
        ["kinetoscope", "schema_version", "verdict", "metrics", "findings", "trimmed"],
    ),
    "summary": _obj(
        "kinetoscope summary --format json: devices, versions, window, steps, top kernels and ops",
        {},
        [],
    ),
    "table": _obj(
        "kinetoscope table --format json: key_averages() rebuilt from the trace",
        {
            "sort_by": STR,
            "self_cpu_total_us": NUM,
            "self_device_total_us": NUM,
            "rows": LIST,
            "trimmed": TRIMMED,
        },  # fmt: skip
        ["sort_by", "rows", "trimmed"],
    ),
    "diff": _obj(
        "kinetoscope diff --format json (docs/compare.md), lists trimmed",
        {"trimmed": TRIMMED},
        ["trimmed"],
    ),
    "check": _obj(
        "kinetoscope check: each expectation with the measured value",
        {"passed": BOOL, "outcomes": LIST},
        ["passed", "outcomes"],
    ),
    "chain": _obj(
        "kinetoscope chain: step -> annotations -> ops -> launch -> kernel, with device time",
        {"matched": NUM, "shown": NUM, "device_us": NUM, "tree": LIST},
        ["matched", "shown", "tree"],
    ),
    "memory": _obj(
        "kinetoscope memory: per device the peak and its op, largest allocations, churn",
        {"devices": LIST},
        ["devices"],
    ),
    "slice": _obj(
        "kinetoscope slice: the file written and what it kept",
        {"source": STR, "output": STR, "events_in": NUM, "events_out": NUM, "steps": LIST},
        ["output", "events_out"],
    ),
}
