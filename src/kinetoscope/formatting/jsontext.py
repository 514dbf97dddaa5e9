"""The one JSON writer: output every other tool can parse.

Python's `json` writes NaN and Infinity as bare `NaN`/`Infinity`, which is not
JSON (jq, JavaScript, Go and Rust parsers reject the whole file). A figure that
is not a finite number becomes `null`, and when the document is an object its
`non_finite` list says which figure it was and what it held, so a reader can
tell "not measured" from "measured as NaN". numpy scalars become plain numbers.
"""

from __future__ import annotations

import json
import math
from typing import Any

#: key added to a top-level object that had non-finite figures
NON_FINITE_KEY = "non_finite"


def dumps(value: Any, indent: int | None = 2, default=None) -> str:
    """`value` as strict JSON text (see the module docstring); `default` as in
    `json.dumps`, for objects that are neither JSON types nor numpy scalars."""
    found: list[dict[str, str]] = []
    clean = _finite(value, "", found)
    if found and isinstance(clean, dict):
        clean = {**clean, NON_FINITE_KEY: found}
    return json.dumps(clean, indent=indent, allow_nan=False, default=default)


def _finite(value: Any, where: str, found: list[dict[str, str]]) -> Any:
    if isinstance(value, float):
        if math.isfinite(value):
            return value
        found.append({"path": where or "$", "value": _spelled(value)})
        return None
    if isinstance(value, (str, int, bool)) or value is None:
        return value
    if isinstance(value, dict):
        return {k: _finite(v, f"{where}.{k}" if where else str(k), found) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_finite(v, f"{where}[{i}]", found) for i, v in enumerate(value)]
    item = getattr(value, "item", None)
    if callable(item) and getattr(value, "ndim", None) == 0:  # a numpy scalar
        return _finite(item(), where, found)
    return value


def _spelled(value: float) -> str:
    if math.isnan(value):
        return "NaN"
    return "Infinity" if value > 0 else "-Infinity"
