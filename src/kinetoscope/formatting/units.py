"""Human units for microsecond floats: the one place numbers become text.

Inside the library every time is microseconds; only text meant for people goes
through here (finding titles, evidence, verdict lines, rendered tables). Rules,
renderers and compare/ all import this module, so a time reads the same
everywhere: 3 significant digits with a unit (`393 us`, `1.18 ms`, `23.1 us`),
never `393.000 us`. The `table_*` variants print the compact form of
`key_averages().table()` (`2.314ms`) and are meant only for that table.
"""

from __future__ import annotations

import math


def _scaled(us: float, digits: int, sep: str) -> str:
    value = abs(us)
    if value >= 1e6:
        return f"{us / 1e6:.{digits}f}{sep}s"
    if value >= 1e3:
        return f"{us / 1e3:.{digits}f}{sep}ms"
    return f"{us:.{digits}f}{sep}us"


def fmt_us(us: float | None, digits: int = 3) -> str:
    """`23.1 us`, `2.31 ms`, `1.25 s`: `digits` significant digits (at least 3, so calls
    written for the former fixed-decimals form keep 3) in the unit that keeps it readable."""
    if us is None or (isinstance(us, float) and math.isnan(us)):
        return "-"
    sig = max(digits, 3)
    value = float(us)
    if value == 0:
        return "0 us"
    for scale, unit in ((1.0, "us"), (1e3, "ms"), (1e6, "s")):
        rounded = float(f"{value / scale:.{sig}g}")
        if abs(rounded) < 1000 or unit == "s":
            return f"{_significant(rounded, sig)} {unit}"
    raise AssertionError("unreachable: seconds take any magnitude")


def _significant(x: float, sig: int) -> str:
    """`x` (already rounded to `sig` significant digits) without exponent, trailing
    zeros kept to show the precision: 1.2 -> `1.20`, 393.0 -> `393`."""
    if abs(x) >= 10 ** (sig - 1):
        return f"{x:.0f}"
    decimals = sig - 1 - math.floor(math.log10(abs(x)))
    return f"{x:.{decimals}f}"


def fmt_pct(share: float, digits: int = 1) -> str:
    """A 0..1 share as a percentage: `0.9854` -> `98.5%`."""
    return f"{share * 100:.{digits}f}%"


def fmt_share(share: float | None) -> str:
    """A 0..1 share as a percentage with 3 significant digits, as `fmt_us` writes times:
    `0.6634` -> `66.3%`, `0.0513` -> `5.13%`, `0.000837` -> `0.0837%`, `1.0` -> `100%`.
    The HTML report's form: a small share stays readable instead of becoming `0.0%`."""
    if share is None or (isinstance(share, float) and math.isnan(share)):
        return "-"
    percent = float(f"{share * 100:.3g}")
    return "0%" if percent == 0 else f"{_significant(percent, 3)}%"


def share_of(part: float, whole: float, of: str) -> str:
    """`42% of {of}`, or `no {of} recorded` when `whole` is not positive: kernels whose
    events carry no duration sum to 0 us, and a share of nothing is no number (a damaged
    trace made it a ZeroDivisionError)."""
    return f"{part / whole:.0%} of {of}" if whole > 0 else f"no {of} recorded"


def fmt_bytes(n: float) -> str:
    """Binary units, as the profiler's memory columns: 33554432 -> `32.0 MB`."""
    for unit, size in (("GB", 1 << 30), ("MB", 1 << 20), ("KB", 1 << 10)):
        if abs(n) >= size:
            return f"{n / size:.1f} {unit}"
    return f"{int(n)} B"


def table_time(us: float) -> str:
    """`12.345us`, `1.234ms`, `2.345s`: the profiler table's own format, for that table only."""
    return _scaled(us, 3, "")


def table_percent(part: float, whole: float) -> str:
    """`12.34%` of `whole`, `0.00%` when the whole is empty, as the profiler table prints it."""
    return f"{100.0 * part / whole:.2f}%" if whole else "0.00%"


def count(n: int, noun: str) -> str:
    """`1 call`, `3 calls`, `2 device copies`: a count with its noun, singular or plural
    (regular nouns; a consonant before a final y makes -ies)."""
    if n == 1:
        return f"{n} {noun}"
    if noun.endswith("y") and noun[-2:-1] not in ("", "a", "e", "i", "o", "u"):
        return f"{n} {noun[:-1]}ies"
    return f"{n} {noun}s"


def fmt_change(a: float | None, b: float | None) -> str:
    """Two times `a -> b (+x%)`, or what is missing on either side (`- -> 1.20 ms`)."""
    if a is None and b is None:
        return "-"
    if a is None or b is None:
        return f"{'-' if a is None else fmt_us(a)} -> {'-' if b is None else fmt_us(b)}"
    pct = f" ({(b - a) / a * 100:+.0f}%)" if a > 0 else ""
    return f"{fmt_us(a)} -> {fmt_us(b)}{pct}"


def rank_ranges(ranks: list[int]) -> str:
    """[0, 1, 2, 3, 5] -> "0-3,5"."""
    ranks = sorted(ranks)
    parts, start = [], None
    for k, r in enumerate(ranks):
        if start is None:
            start = r
        if k + 1 == len(ranks) or ranks[k + 1] != r + 1:
            parts.append(f"{start}-{r}" if r != start else f"{r}")
            start = None
    return ",".join(parts)
