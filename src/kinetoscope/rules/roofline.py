"""Share-of-peak evidence for the compute-bound verdict (no rule of its own).

A busy device is the goal, but "busy" says nothing about how well the time is
spent; the GEMMs' achieved FLOP/s against the datasheet peak for their dtype
(`analysis.roofline`) is what says whether the kernels themselves have room.
"""

from __future__ import annotations

from ..analysis.roofline import roofline
from ..units import fmt_pct
from .base import Evidence


def peak_evidence(ctx) -> list[Evidence]:
    """One line per GEMM dtype: achieved TFLOP/s, the device's peak and the share."""
    roof = ctx.analysis(roofline)
    out = []
    for row in roof.by_dtype:
        achieved = row.achieved_flops / 1e12
        if row.share_of_peak is None:
            why = f"{roof.device or 'this device'} is not in the peak table"
            if roof.peaks is not None:
                why = f"the table has no {row.dtype} peak for {roof.peaks.device}"
            text = f"{row.ops} {row.dtype} GEMMs run at {achieved:.3g} TFLOP/s ({why})"
        else:
            text = (
                f"{row.ops} {row.dtype} GEMMs run at {achieved:.3g} TFLOP/s, "
                f"{fmt_pct(row.share_of_peak)} of the {roof.peaks.device} {row.dtype} peak "
                f"({row.peak_flops / 1e12:.4g} TFLOP/s, {roof.peaks.source})"
            )
        out.append(Evidence(text, value=row.share_of_peak, unit="of peak"))
    return out
