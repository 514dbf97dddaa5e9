"""Render a `ProfilerTable` like `torch.profiler`'s `key_averages().table()`.

Same columns, units and closing lines, so the output can be read and diffed
next to the `.txt` a profiling run exported. The build step
(`pipeline.table_data.profiler_table`) fills the table from `analysis.table`.
"""

from __future__ import annotations

from ..formatting.units import table_percent, table_time
from .console import inert
from .evidence import display
from .table_model import ProfilerRow, ProfilerTable

_NAME_WIDTH = 55


def _shorten(name: str) -> str:
    """The name as every view shows it (`evidence.display`: no `std::enable_if<...>::type`
    return type, CUTLASS wrappers read), control characters shown as `\\xNN`, cut to the
    column."""
    name = inert(display(name, limit=len(name) + 1))
    return name if len(name) < _NAME_WIDTH - 3 else name[: _NAME_WIDTH - 3] + "..."


def render_table(table: ProfilerTable) -> str:
    rows = table.rows
    cpu_total = table.self_cpu_total_us
    dev_total = table.self_device_total_us
    headers = ["Name", "Self CPU %", "Self CPU", "CPU total %", "CPU total", "CPU time avg"]
    if table.has_device:
        headers += ["Self device", "Self device %", "device total", "device time avg"]
    headers.append("# of Calls")

    def cells(r: ProfilerRow) -> list[str]:
        out = [
            _shorten(r.name),
            table_percent(r.self_cpu_us, cpu_total),
            table_time(r.self_cpu_us),
            table_percent(r.cpu_total_us, cpu_total),
            table_time(r.cpu_total_us),
            table_time(r.cpu_avg_us),
        ]
        if table.has_device:
            out += [
                table_time(r.self_device_us),
                table_percent(r.self_device_us, dev_total),
                table_time(r.device_total_us),
                table_time(r.device_avg_us),
            ]
        out.append(str(r.calls))
        return out

    body = [cells(r) for r in rows]
    widths = [max([len(h)] + [len(row[i]) for row in body]) + 2 for i, h in enumerate(headers)]
    rule = "  ".join("-" * w for w in widths)

    def line(values: list[str]) -> str:
        return "  ".join(v.rjust(w) for v, w in zip(values, widths, strict=True))

    lines = [rule, line(headers), rule, *(line(v) for v in body), rule]
    lines.append(f"Self CPU time total: {table_time(cpu_total)}")
    if table.has_device:
        lines.append(f"Self CUDA time total: {table_time(dev_total)}")
    return "\n".join(lines) + "\n"
