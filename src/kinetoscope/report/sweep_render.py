"""A sweep as a table and a plot, laid out from a `SweepDocument` (`report.sweep_model`)
that `compare.sweep_doc` builds: the points, their printed values, the curves, the
crossover and the rate series.

The table: one row per value, columns chosen by what the runs recorded. GPU runs
show host vs device time per step and the busy ratio; CPU runs show explain's
host-time parts per step (compute, dispatch, Python/other) and its compute share
of the window, the number its verdict is judged on.

The plot: host vs device (or dispatch vs compute) time per step against the
parameter, and achieved TFLOP/s below it when the runs recorded shapes: the step's
matmul FLOPs over its busy time, and each rated op class (GEMM, attention,
convolution) over its own kernel time, with each class's share of the device's
datasheet peak on that panel's right axis where the device is in the peak table
(the document's `rates` and `shares` are what the panel draws). The legend sits
outside the axes (below the time panel) and the crossover label inside at the top
of the axes, so the two never overlap whatever the data. The panels share the x
axis. matplotlib comes from the `report.plotting` set-up; the command writes the
figure.
"""

from __future__ import annotations

from ..formatting.units import fmt_pct, fmt_us
from .plotting import DPI
from .sweep_model import STEP_RATE, SweepDocument, SweepPoint
from .tables import fit_table


def _tflops(p: SweepPoint) -> str:
    return f"{p.tflops:.3g}" if p.tflops is not None else "-"


def _share(p: SweepPoint, op_class: str) -> float | None:
    return p.classes.get(op_class, {}).get("share_of_peak")


def table_rows(doc: SweepDocument) -> tuple[list[str], list[list[str]]]:
    """(headers, rows) of the sweep's table: a row per value, failed ones marked."""
    param, points, mode = doc.param, doc.points, doc.mode
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
    for p, label in zip(points, doc.labels, strict=True):
        if not p.ok:
            rows.append([label, "failed"] + [""] * (len(headers) - 2))
            continue
        row = [label, fmt_us(p.step_us, 1), fmt_us(p.host_us, 1)]
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
    return fit_table(headers, rows, width, DROP_FIRST, title=title)


def sweep_figure(plt, doc: SweepDocument, title: str):
    """The figure: a time panel, plus a TFLOP/s panel where any point measured one."""
    mode, rows, crossing = doc.mode, doc.curve, doc.crossover
    xs = [r[0] for r in rows]
    labels = (
        ("device busy / step", "host busy / step")
        if mode == "device"
        else ("compute (math-op self time) / step", "dispatch + Python/other / step")
    )
    rates, shares = doc.rates, doc.shares
    panels = 2 if rates or shares else 1
    fig, axes = plt.subplots(
        panels, 1, figsize=(7, 4.8 + 2.2 * (panels - 1)), dpi=DPI, sharex=True, squeeze=False,
        gridspec_kw={"height_ratios": [3, 2][:panels]},
    )  # fmt: skip
    ax = axes[0, 0]
    ax.plot(xs, [r[1] for r in rows], "o-", label=labels[0], color="tab:orange")
    ax.plot(xs, [r[2] for r in rows], "s-", label=labels[1], color="tab:blue")
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_ylabel("time per step (us)")
    ax.set_title(title)
    if crossing is not None:
        for a in axes[:, 0]:
            a.axvline(crossing, color="gray", linestyle="--")
        ax.annotate(
            f"crossover ~{crossing:.3g}",
            (crossing, 0.97),
            xycoords=("data", "axes fraction"),
            ha="center",
            va="top",
            fontsize=9,
            bbox={"boxstyle": "round,pad=0.2", "fc": "white", "ec": "0.7"},
        )
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.1 if panels == 1 else -0.04),
              ncol=2, fontsize=8, frameon=False)  # fmt: skip
    if panels == 2:
        low = axes[1, 0]
        for (label, series), marker in zip(rates.items(), "Dos^", strict=False):
            low.plot([v for v, _ in series], [r for _, r in series], marker + "-", label=label,
                     color=_COLORS.get(label, "tab:green"))  # fmt: skip
        low.set_ylabel("achieved TFLOP/s")
        low.set_ylim(bottom=0)
        low.grid(True, which="both", alpha=0.3)
        if rates:
            low.legend(loc="upper left", fontsize=7)
        _plot_share_of_peak(low, shares)
    axes[-1, 0].set_xlabel(doc.param)
    fig.tight_layout()
    return fig


#: one colour per series across both axes of the rate panel
_COLORS = {
    STEP_RATE: "tab:green",
    "gemm": "tab:purple",
    "attention": "tab:red",
    "conv": "tab:brown",
}


def _plot_share_of_peak(ax, shares: dict[str, list[tuple[float, float]]]) -> None:
    """Each class's share of the device's peak (value, share) on a right-hand axis of the
    TFLOP/s panel, where the device is in the peak table (analysis.peaks)."""
    if not shares:
        return
    right = ax.twinx()
    for op_class, rated in shares.items():
        right.plot(
            [v for v, _ in rated],
            [100 * s for _, s in rated],
            "^:",
            color=_COLORS.get(op_class, "tab:green"),
            label=f"{op_class} share of peak FLOP/s",
        )
    right.set_ylabel("achieved / peak FLOP/s (%)")
    right.set_ylim(0, 100)
    right.legend(loc="lower right", fontsize=7)
