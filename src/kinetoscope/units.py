"""Human units for microsecond floats, the way the profiler table prints them.

Inside the library every time is microseconds; only text meant for people goes
through here (finding titles, verdict lines, rendered tables).
"""

from __future__ import annotations

import math


def fmt_us(us: float, digits: int = 3) -> str:
    """`23.104 us`, `2.314 ms`, `1.250 s`: the unit that keeps the number readable."""
    if us is None or (isinstance(us, float) and math.isnan(us)):
        return "-"
    value = abs(us)
    if value >= 1e6:
        return f"{us / 1e6:.{digits}f} s"
    if value >= 1e3:
        return f"{us / 1e3:.{digits}f} ms"
    return f"{us:.{digits}f} us"


def fmt_pct(share: float, digits: int = 1) -> str:
    """A 0..1 share as a percentage: `0.9854` -> `98.5%`."""
    return f"{share * 100:.{digits}f}%"


def fmt_bytes(n: float) -> str:
    """Binary units, as the profiler's memory columns: 33554432 -> `32.0 MB`."""
    for unit, size in (("GB", 1 << 30), ("MB", 1 << 20), ("KB", 1 << 10)):
        if abs(n) >= size:
            return f"{n / size:.1f} {unit}"
    return f"{int(n)} B"
