"""Parse a `key_averages().table()` text export, to compare our rebuilt table with it."""

from __future__ import annotations

import re
from dataclasses import dataclass

_UNITS = {"us": 1.0, "ms": 1e3, "s": 1e6}
_TIME = re.compile(r"^(-?[\d.]+)(us|ms|s)$")


def parse_time(text: str) -> float:
    match = _TIME.match(text.strip())
    if not match:
        raise ValueError(f"not a profiler time: {text!r}")
    return float(match.group(1)) * _UNITS[match.group(2)]


@dataclass
class ProfilerTable:
    rows: dict[str, dict[str, str]]
    self_cpu_total_us: float
    self_device_total_us: float | None


def parse_profiler_table(text: str) -> ProfilerTable:
    lines = [ln for ln in text.splitlines() if ln.strip()]
    header_at = next(i for i, ln in enumerate(lines) if ln.strip().startswith("Name"))
    # column spans come from the dashed rule above the header (names may hold spaces)
    spans = [m.span() for m in re.finditer(r"-+", lines[header_at - 1])]

    def cut(line: str) -> list[str]:
        return [line[a:b].strip() for a, b in spans]

    headers = cut(lines[header_at])
    rows: dict[str, dict[str, str]] = {}
    for line in lines[header_at + 2 :]:
        if line.startswith("-"):
            break
        cells = cut(line)
        rows.setdefault(cells[0], dict(zip(headers, cells, strict=True)))
    cpu_total = next(ln for ln in lines if ln.startswith("Self CPU time total:"))
    dev = [ln for ln in lines if re.match(r"Self \w+ time total:", ln) and "CPU" not in ln]
    return ProfilerTable(
        rows=rows,
        self_cpu_total_us=parse_time(cpu_total.split(":", 1)[1]),
        self_device_total_us=parse_time(dev[0].split(":", 1)[1]) if dev else None,
    )
