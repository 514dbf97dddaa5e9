"""The build step of a sweep's table and figure: points -> the `SweepDocument` that
`report.sweep_render` lays out.

The mode and the curves are the ones the crossover is read on (`compare.sweep.curves`),
so the plotted lines and the printed crossover cannot disagree; the rate panel's
series cover each rated op class of `analysis.roofline`, in its order.
"""

from __future__ import annotations

from ..analysis.roofline import CLASSES
from ..report.sweep_model import STEP_RATE, SweepDocument, SweepPoint
from .sweep import Crossover, curves, format_value


def sweep_document(param: str, points: list[SweepPoint], cross: Crossover) -> SweepDocument:
    """What the table and the figure show of `points`, swept over `param`."""
    mode, curve = curves(points)
    rates, shares = rate_series(points)
    labels = [format_value(p.value) for p in points]
    return SweepDocument(param, mode, points, labels, curve, cross.value, rates, shares)


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
