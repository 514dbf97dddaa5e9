"""Share-of-peak evidence for the compute-bound and host-only verdicts (no rule of its own).

A busy device is the goal, but "busy" says nothing about how well the time is
spent; the achieved FLOP/s of the GEMMs, attention calls and convolutions
against the datasheet peak for their dtype (`analysis.roofline`) is what says
whether the kernels themselves have room. On a host-only run the same ops are
rated on their CPU time, without a peak to compare to.
"""

from __future__ import annotations

from ..analysis.roofline import Roofline, RooflineRow, Unrated, roofline
from ..formatting.units import fmt_pct, fmt_us
from .base import Evidence

#: How each class's ops are named in a sentence.
NOUNS = {"gemm": "GEMMs", "attention": "attention calls", "conv": "convolutions"}


def _rate(flops_per_s: float) -> str:
    if flops_per_s >= 1e12:
        return f"{flops_per_s / 1e12:.3g} TFLOP/s"
    return f"{flops_per_s / 1e9:.3g} GFLOP/s"


def _ops(row: RooflineRow) -> str:
    backward = f" ({row.backward} of them backward)" if row.backward else ""
    return f"{row.ops} {row.dtype} {NOUNS[row.op_class]}{backward}"


def _row_text(roof: Roofline, row: RooflineRow) -> str:
    where = " on the CPU" if roof.on_cpu else ""
    head = f"{_ops(row)} run at {_rate(row.achieved_flops)}{where}"
    if row.intensity is not None:
        head += f" ({row.intensity:.3g} FLOP/byte at minimum traffic)"
    if row.share_of_peak is not None:
        text = (
            f"{head}, {fmt_pct(row.share_of_peak)} of the {roof.peaks.device} {row.dtype} peak "
            f"({row.peak_flops / 1e12:.4g} TFLOP/s, {roof.peaks.source})"
        )
    else:
        why = roof.peak_note or f"the table has no {row.dtype} peak for {roof.peaks.device}"
        text = f"{head} ({why})"
    for note, count in row.notes.items():
        text += f"; {count} of them: {note}"
    return text


def _unrated_text(op_class: str, lost: Unrated, on_cpu: bool) -> str:
    reasons = ", ".join(f"{why}: {n}" for why, n in lost.reasons.most_common())
    if on_cpu:
        cpu = fmt_us(lost.device_us)
        return f"{lost.calls} {NOUNS[op_class]} ({cpu} CPU) not rated ({reasons})"
    return (
        f"{NOUNS[op_class]}: {lost.kernels} kernels ({fmt_us(lost.device_us)} device time) "
        f"not rated ({reasons})"
    )


def peak_evidence(ctx) -> list[Evidence]:
    """Per class and dtype: achieved FLOP/s, the device's peak and the share; per class
    over its dtypes where it has several; then what each class had that was not rated."""
    roof = ctx.analysis(roofline)
    out = [Evidence(_row_text(roof, row), value=row.share_of_peak, unit="of peak")
           for row in roof.rows]  # fmt: skip
    for op_class in NOUNS:
        rows = roof.of_class(op_class)
        summary = roof.summary(op_class)
        if len(rows) > 1 and summary is not None:
            share = f", {fmt_pct(summary.share_of_peak)} of peak" if summary.share_of_peak else ""
            out.append(
                Evidence(
                    f"all {summary.ops} {NOUNS[op_class]}: {_rate(summary.achieved_flops)}{share}",
                    value=summary.share_of_peak,
                    unit="of peak",
                )
            )
    for op_class, lost in roof.unrated.items():
        if lost.device_us > 0 and (lost.kernels or roof.on_cpu):
            out.append(Evidence(_unrated_text(op_class, lost, roof.on_cpu), value=lost.device_us,
                                unit="us"))  # fmt: skip
    return out
