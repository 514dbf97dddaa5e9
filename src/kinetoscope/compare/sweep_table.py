"""The sweep table: one row per value, columns chosen by what the runs recorded.

GPU runs show host vs device time per step and the busy ratio; CPU runs show
explain's host-time parts per step (compute, dispatch, Python/other) and its
compute share of the window, the number its verdict is judged on.
"""

from __future__ import annotations

from ..formatting.units import fmt_pct, fmt_us
from .sweep import SweepPoint, curves, format_value


def _tflops(p: SweepPoint) -> str:
    return f"{p.tflops:.3g}" if p.tflops is not None else "-"


def _share(p: SweepPoint, op_class: str) -> float | None:
    return p.classes.get(op_class, {}).get("share_of_peak")


def table_rows(param: str, points: list[SweepPoint]) -> tuple[list[str], list[list[str]]]:
    mode, _ = curves(points)
    peak = any(p.share_of_peak is not None for p in points)
    if mode == "device":
        headers = [param, "step", "host/step", "device/step", "busy ratio", "regime", "TFLOP/s"]
    else:
        headers = [param, "step", "host/step", "compute/step", "dispatch/step"]
        headers += ["Python/other/step", "compute %"]
        headers += ["regime", "TFLOP/s"]
    if peak:
        headers.append("GEMM % of peak")
    # the other rated classes, where any point has a share of peak for them
    others = [c for c in ("attention", "conv") if any(_share(p, c) is not None for p in points)]
    headers += [f"{c} % of peak" for c in others]
    rows = []
    for p in points:
        if not p.ok:
            rows.append([format_value(p.value), "failed"] + [""] * (len(headers) - 2))
            continue
        row = [format_value(p.value), fmt_us(p.step_us, 1), fmt_us(p.host_us, 1)]
        if mode == "device":
            row += [fmt_us(p.device_us, 1), fmt_pct(p.busy_ratio)]
        else:
            row += [fmt_us(p.compute_us, 1), fmt_us(p.dispatch_us, 1), fmt_us(p.other_us, 1)]
            row.append(fmt_pct(p.compute_share) if p.compute_share is not None else "-")
        row += [p.regime or "-", _tflops(p)]
        if peak:
            row.append(fmt_pct(p.share_of_peak) if p.share_of_peak is not None else "-")
        for c in others:
            share = _share(p, c)
            row.append(fmt_pct(share) if share is not None else "-")
        rows.append(row)
    return headers, rows


#: Columns left out first when the table is wider than the terminal (the rest stay
#: whole, never cut to `host/st...`): rated shares of peak, then TFLOP/s, then ratios.
DROP_FIRST = ("conv % of peak", "attention % of peak", "GEMM % of peak", "TFLOP/s",
              "busy ratio", "compute %", "dispatch/step")  # fmt: skip


def fitted_table(headers: list[str], rows: list[list[str]], title: str, width: int):
    """(rich Table, note): columns dropped in `DROP_FIRST` order until the table's
    natural width fits `width`; the note names what was left out (all of it is in the
    sweep's JSON), or is None."""
    from rich.console import Console
    from rich.table import Table
    from rich.text import Text

    def build(keep: list[int]) -> Table:
        table = Table(*(headers[k] for k in keep), title=title, show_edge=False)
        for row in rows:
            table.add_row(*(Text(row[k]) for k in keep))
        return table

    keep = list(range(len(headers)))
    console = Console(width=10_000)  # measures the natural width, unbounded
    table = build(keep)
    dropped = []
    for name in DROP_FIRST:
        if console.measure(table).maximum <= width:
            break
        if name in headers and headers.index(name) in keep:
            keep.remove(headers.index(name))
            dropped.append(name)
            table = build(keep)
    note = f"left out to fit {width} columns: {', '.join(dropped)}" if dropped else None
    return table, note
