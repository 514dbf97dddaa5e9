"""The sweep plot: host vs device (or dispatch vs compute) time per step against the
parameter, and achieved TFLOP/s below it when the runs recorded shapes: the step's matmul
FLOPs over its busy time, and each rated op class (GEMM, attention, convolution) over its
own kernel time, with each class's share of the device's datasheet peak on that panel's
right axis where the device is in the peak table (`rate_series` is what the panel draws).

The legend sits outside the axes (below the time panel) and the crossover label
inside at the top of the axes, so the two never overlap whatever the data. The
panels share the x axis. matplotlib is imported lazily with the Agg backend, so
the rest of the tool runs without it and no display is needed.
"""

from __future__ import annotations

from pathlib import Path

from ..analysis.roofline import CLASSES
from ..files.outputs import write_file
from .sweep import Crossover, SweepPoint, curves


def sweep_figure(plt, points: list[SweepPoint], cross: Crossover, title: str, param: str):
    """The figure: a time panel, plus a TFLOP/s panel where any point measured one."""
    mode, rows = curves(points)
    xs = [r[0] for r in rows]
    labels = (
        ("device busy / step", "host busy / step")
        if mode == "device"
        else ("compute (math-op self time) / step", "dispatch + Python/other / step")
    )
    rates, shares = rate_series(points)
    panels = 2 if rates or shares else 1
    fig, axes = plt.subplots(
        panels, 1, figsize=(7, 4.8 + 2.2 * (panels - 1)), dpi=110, sharex=True, squeeze=False,
        gridspec_kw={"height_ratios": [3, 2][:panels]},
    )  # fmt: skip
    ax = axes[0, 0]
    ax.plot(xs, [r[1] for r in rows], "o-", label=labels[0], color="tab:orange")
    ax.plot(xs, [r[2] for r in rows], "s-", label=labels[1], color="tab:blue")
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_ylabel("time per step (us)")
    ax.set_title(title)
    if cross.value is not None:
        for a in axes[:, 0]:
            a.axvline(cross.value, color="gray", linestyle="--")
        ax.annotate(
            f"crossover ~{cross.value:.3g}",
            (cross.value, 0.97),
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
    axes[-1, 0].set_xlabel(param)
    fig.tight_layout()
    return fig


def plot_sweep(
    points: list[SweepPoint],
    cross: Crossover,
    title: str,
    param: str,
    stem: Path,
    force: bool = False,
) -> list[tuple[Path, Path]]:
    """Write `stem`.png and `stem`.svg (never over an earlier file unless `force`);
    returns (wanted, written) paths."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig = sweep_figure(plt, points, cross, title, param)
    out = []
    try:
        for ext in ("png", "svg"):
            path = stem.with_suffix("." + ext)
            written = write_file(path, lambda f, e=ext: fig.savefig(f, format=e), force=force)
            out.append((path, written))
    finally:
        plt.close(fig)
    return out


#: the label of the step-level rate: the step's matmul FLOPs over its busy time
STEP_RATE = "matmul FLOPs / busy time"
#: one colour per series across both axes of the rate panel
_COLORS = {
    STEP_RATE: "tab:green",
    "gemm": "tab:purple",
    "attention": "tab:red",
    "conv": "tab:brown",
}


def rate_series(
    points: list[SweepPoint],
) -> tuple[dict[str, list[tuple[float, float]]], dict[str, list[tuple[float, float]]]]:
    """What the rate panel draws: achieved TFLOP/s per series (the step's matmul rate and
    each rated op class), and each class's share of peak, as (value, y) lists."""
    ok = [p for p in points if p.ok]
    rates = {STEP_RATE: [(p.value, p.tflops) for p in ok if p.tflops]}
    shares: dict[str, list[tuple[float, float]]] = {}
    for op_class in CLASSES:
        got = [(p.value, p.classes[op_class]) for p in ok if op_class in p.classes]
        rates[op_class] = [(v, c["tflops"]) for v, c in got if c["tflops"]]
        shares[op_class] = [(v, c["share_of_peak"]) for v, c in got
                            if c["share_of_peak"] is not None]  # fmt: skip
    return (
        {k: v for k, v in rates.items() if v},
        {k: v for k, v in shares.items() if v},
    )


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
