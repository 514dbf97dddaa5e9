"""How one piece of evidence reads, shared by the text, Markdown and HTML renderers.

A rule writes each fact once (`text`) and locates it (`name`, `step`, `ts_us`,
`dur_us`); it also keeps the raw number in `value` for JSON. The renderers say
each thing once: the value only when the text does not already state a time,
the event name only when the text does not already mention it, the step only
once when the name or the text already says it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from ..analysis.kernel_names import decode, display_name
from ..formatting.units import fmt_us
from ..rules.base import Evidence

#: A time already written in the text: `84.0 us`, `2.314 ms`, `1.2s`.
_TIME_IN_TEXT = re.compile(r"\d(?:\.\d+)?\s?(?:us|ms|s)\b")


#: Names longer than this are kernel names (hipBLASLt, CUTLASS, Triton...), not ops.
_LONG_NAME = 40


@dataclass(frozen=True)
class EvidenceLine:
    """The parts of one evidence line, in reading order: name, text, where."""

    name: str  # display name ("" when the evidence names no event)
    text: str
    where: str  # "step #3, at +1.234 ms, for 5.000 us" ("" when not located)


def value_suffix(e: Evidence) -> str:
    """`: 2.114 ms` when the evidence carries a time its text does not already state."""
    if e.value is None or e.unit != "us" or _TIME_IN_TEXT.search(e.text):
        return ""
    return f": {fmt_us(e.value)}"


def location(e: Evidence, with_step: bool = True) -> str:
    """`step #3, at +1.234 ms, for 5.000 us`: where to find the event in Perfetto."""
    where = []
    if e.step is not None and with_step:
        where.append(f"step #{e.step}")
    if e.ts_us is not None:
        where.append(f"at +{fmt_us(e.ts_us)}")
    if e.dur_us is not None:
        where.append(f"for {fmt_us(e.dur_us)}")
    if e.source and e.source not in e.text:
        where.append(f"at {e.source}")
    return ", ".join(where)


def display(name: str, limit: int = 90) -> str:
    """An event's display name (`analysis.kernel_names.display_name`: no return type such as
    `std::enable_if<...>::type`, no parameter list, a CUTLASS wrapper read as the kernel
    inside), for every renderer: report/ reaches the name decoder only through here."""
    return display_name(name, limit)


def short_name(name: str, limit: int = 90) -> str:
    """A readable event name: C++ kernel signatures and names longer than `limit` decoded
    to their short form (`void at::native::(anonymous namespace)::layer_norm<float>(int,
    ...)` -> `layer_norm`), anything else as recorded; cut to `limit` (JSON keeps it whole)."""
    if _is_signature(name) or len(name) > limit:
        name = decode(name).short
    return name if len(name) <= limit else name[: limit - 3] + "..."


def _is_signature(name: str) -> bool:
    """`void f<T>(args)` or `kernel(args)`: a C++ function, not an event like `Memcpy (x)`."""
    if name.startswith("void "):
        return True
    cut = name.find("(", 1)
    return name.endswith(")") and cut > 0 and name[cut - 1] != " "


def evidence_line(e: Evidence) -> EvidenceLine:
    """Split `e` into what to print, dropping what would be said twice."""
    text = e.text + value_suffix(e)
    name = ""
    if e.name:
        written = {e.name, short_name(e.name, limit=len(e.name))}
        if len(e.name) > _LONG_NAME:  # a kernel: rules write its decoded short name
            written.add(decode(e.name).short)
        name = "" if any(w in text for w in written) else short_name(e.name)
    step_said = e.step is not None and e.name == f"ProfilerStep#{e.step}"
    if e.step is not None:
        for prefix in (f"step #{e.step}: ", f"step #{e.step} "):
            if text.startswith(prefix):
                text, step_said = text[len(prefix) :], True
                break
    return EvidenceLine(name, text, location(e, with_step=not step_said))
