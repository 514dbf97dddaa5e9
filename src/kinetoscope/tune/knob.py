"""`kinetoscope.knob("batch_size", 32)`: a value `kinetoscope tune` may set.

A user script asks for each tunable value through this function. Run normally,
it returns the default. Run as a tune trial, the tuner puts the trial's value
in the environment (`KINETOSCOPE_KNOB_BATCH_SIZE=64`) and the function returns
it converted to the default's type, so the script's file is never edited.
Nothing here imports torch; the names read and the values returned are
remembered (`read_knobs`), so a trial can tell the user that a knob they asked
to tune was never read, and knows the batch size a script ran with.
"""

from __future__ import annotations

import os
import re

#: environment variable prefix the tuner sets, one variable per knob
ENV_PREFIX = "KINETOSCOPE_KNOB_"

_TRUE = {"1", "true", "yes", "on"}
_FALSE = {"0", "false", "no", "off"}

#: knob name -> the value returned, in order of first read
_READ: dict[str, object] = {}


def env_name(name: str) -> str:
    """`batch_size` (or `batch-size`) -> `KINETOSCOPE_KNOB_BATCH_SIZE` (what the tuner sets)."""
    if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_-]*", name):
        raise ValueError(f"knob name {name!r}: use letters, digits, - and _ only")
    return ENV_PREFIX + name.upper().replace("-", "_")


def knob(name: str, default):
    """The value the tuner chose for `name`, else `default` (converted to its type)."""
    variable = env_name(name)
    text = os.environ.get(variable)
    value = default if text is None else convert(text, default, variable)
    _READ.setdefault(name, value)
    return value


def convert(text: str, default, where: str = "value"):
    """`text` as the type of `default` (bool, int, float or str; None keeps the text)."""
    if isinstance(default, bool):
        low = text.strip().lower()
        if low in _TRUE or low in _FALSE:
            return low in _TRUE
        raise ValueError(f"{where}={text!r}: expected true or false")
    if isinstance(default, int):
        return int(text)
    if isinstance(default, float):
        return float(text)
    return text


def read_knobs() -> dict[str, object]:
    """{name: value returned} of every `knob()` call in this process so far."""
    return dict(_READ)
