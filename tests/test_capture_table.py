"""The `.txt` table written at capture agrees with the trace written next to it."""

from __future__ import annotations

import re

import pytest

pytest.importorskip("torch")

import kinetoscope  # noqa: E402
from kinetoscope.capture.runner import CaptureOptions, run_workload  # noqa: E402
from kinetoscope.trace import Cat  # noqa: E402

_UNITS = {"us": 1.0, "ms": 1e3, "s": 1e6}


def table_total_us(text: str, label: str) -> float:
    """`Self CPU time total: 45.828ms` -> 45828.0 (the profiler's footer)."""
    match = re.search(rf"{label} time total: ([\d.]+)(us|ms|s)\b", text)
    assert match, f"no '{label} time total' in the table"
    return float(match.group(1)) * _UNITS[match.group(2)]


def column_us(text: str, column: str) -> list[float]:
    """One time column of the table's rows, in table order."""
    lines = text.splitlines()
    header = next(i for i, line in enumerate(lines) if line.strip().startswith("Name"))
    names = re.split(r"\s{2,}", lines[header].strip())
    index = names.index(column)
    values = []
    for line in lines[header + 2 :]:
        if line.startswith("-"):
            break
        cell = re.split(r"\s{2,}", line.strip())[index]
        number, unit = re.fullmatch(r"([\d.]+)(us|ms|s)", cell).groups()
        values.append(float(number) * _UNITS[unit])
    return values


@pytest.mark.parametrize(
    ("name", "overrides"),
    [
        ("mlp", {"batch": 1, "seq": 8, "dim": 16, "hidden": 32}),
        ("dataloader", {"batch": 4, "image": 8, "blur": 2, "hidden": 8}),
    ],
)
def test_table_totals_match_the_trace_within_1_percent(tmp_path, name, overrides):
    result = run_workload(name, overrides, CaptureOptions(device="cpu", out=tmp_path))
    [written] = result.written
    text = written.table.read_text()
    trace = kinetoscope.load(written.trace)
    host_ops = (
        trace.mask(Cat.CPU_OP, Cat.USER_ANNOTATION) & (trace.lane_kind == 1) & ~trace.is_instant
    )
    self_cpu_us = float(trace.self_time[host_ops].sum())
    assert self_cpu_us == pytest.approx(table_total_us(text, "Self CPU"), rel=0.01)
    cpu_total = column_us(text, "CPU total")
    assert cpu_total == sorted(cpu_total, reverse=True)  # sorted by CPU time: no device here
