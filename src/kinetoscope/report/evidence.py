"""How one piece of evidence reads, shared by the text, Markdown and HTML renderers."""

from __future__ import annotations

from ..rules.base import Evidence
from ..units import fmt_us


def value_suffix(e: Evidence) -> str:
    """`: 2.114 ms` when the evidence carries a time its text does not already state."""
    if e.value is None or e.unit != "us" or any(ch.isdigit() for ch in e.text):
        return ""
    return f": {fmt_us(e.value)}"


def location(e: Evidence) -> str:
    """`step #3, at +1.234 ms, for 5.000 us`: where to find the event in Perfetto."""
    where = []
    if e.step is not None:
        where.append(f"step #{e.step}")
    if e.ts_us is not None:
        where.append(f"at +{fmt_us(e.ts_us)}")
    if e.dur_us is not None:
        where.append(f"for {fmt_us(e.dur_us)}")
    return ", ".join(where)
