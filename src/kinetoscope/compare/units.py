"""Microseconds to the unit a reader expects (the profiler table's us/ms/s)."""

from __future__ import annotations


def format_us(us: float) -> str:
    if abs(us) >= 1e6:
        return f"{us / 1e6:.3g} s"
    if abs(us) >= 1e3:
        return f"{us / 1e3:.3g} ms"
    return f"{us:.3g} us"
