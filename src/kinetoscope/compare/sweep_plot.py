"""The sweep plot: host vs device (or dispatch vs compute) time per step against the parameter.

matplotlib is imported lazily with the Agg backend, so the rest of the tool
runs without it and no display is needed.
"""

from __future__ import annotations

from pathlib import Path

from ..outputs import write_file
from .sweep import Crossover, SweepPoint, curves


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

    mode, rows = curves(points)
    xs = [r[0] for r in rows]
    labels = (
        ("device busy / step", "host busy / step")
        if mode == "device"
        else ("compute ops (self time) / step", "rest of the step (dispatch, other ops) / step")
    )
    fig, ax = plt.subplots(figsize=(7, 4.5), dpi=110)
    ax.plot(xs, [r[1] for r in rows], "o-", label=labels[0], color="tab:orange")
    ax.plot(xs, [r[2] for r in rows], "s-", label=labels[1], color="tab:blue")
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xlabel(param)
    ax.set_ylabel("time per step (us)")
    ax.set_title(title)
    if cross.value is not None:
        ax.axvline(cross.value, color="gray", linestyle="--")
        ax.annotate(
            f"crossover ~{cross.value:.3g}",
            (cross.value, 0.95),
            xycoords=("data", "axes fraction"),
            ha="center",
            va="top",
            fontsize=9,
            backgroundcolor="white",
        )
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(loc="upper left", fontsize=9)
    _plot_share_of_peak(ax, points)
    fig.tight_layout()
    out = []
    try:
        for ext in ("png", "svg"):
            path = stem.with_suffix("." + ext)
            written = write_file(path, lambda f, e=ext: fig.savefig(f, format=e), force=force)
            out.append((path, written))
    finally:
        plt.close(fig)
    return out


def _plot_share_of_peak(ax, points: list[SweepPoint]) -> None:
    """GEMM share of the device's peak on a right-hand axis, where the device is in the table."""
    rated = [(p.value, p.share_of_peak) for p in points if p.ok and p.share_of_peak is not None]
    if not rated:
        return
    right = ax.twinx()
    right.plot(
        [v for v, _ in rated],
        [100 * s for _, s in rated],
        "^:",
        color="tab:green",
        label="GEMM share of peak FLOP/s",
    )
    right.set_ylabel("GEMM achieved / peak FLOP/s (%)")
    right.set_ylim(0, 100)
    right.legend(loc="lower right", fontsize=9)
