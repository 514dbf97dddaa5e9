"""Device work by type in both runs, and the kernels that appeared or vanished, by type.

"12 new kernels" says little; "768 new device-to-device copies" says where to
look. Types come from `analysis.kernel_types` (the same labels `explain` and
`summary` show). Kernels are matched by name first (`diff.diff_kernels`), so a
new or gone kernel row is counted under its type with its calls per step;
copies and memsets have no kernel name to match (only a direction), so their
appeared or vanished count is the change of their count per step.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..analysis.kernel_types import KERNEL_TYPES, kernel_type_in, kernel_types
from ..trace import Trace

#: Types without kernel names to match: counted by how many more or fewer there are.
UNNAMED = tuple(t for t in KERNEL_TYPES if t.startswith("memcpy") or t == "memset")

#: How a count of each type reads in a sentence ("768 new device-to-device copies").
PLURAL = {
    "gemm": "GEMM kernels",
    "attention": "attention kernels",
    "conv": "convolution kernels",
    "communication": "communication kernels",
    "elementwise": "elementwise kernels",
    "reduction": "reduction/normalization kernels",
    "embedding": "embedding kernels",
    "memcpy HtoD": "host-to-device copies",
    "memcpy DtoH": "device-to-host copies",
    "memcpy DtoD": "device-to-device copies",
    "memcpy PtoP": "peer-to-peer copies",
    "memcpy other": "other copies",
    "memset": "memsets",
    "spin": "spin kernels",
    "other": "other kernels",
}


@dataclass(frozen=True)
class TypeChange:
    """One kernel type: events and device time per step in each run, and what came and went."""

    type: str
    events_a: float  # per step
    events_b: float
    us_a: float  # device time per step
    us_b: float
    #: per step: calls of kernels only B runs (or the rise in count, for copies/memsets)
    appeared: float
    #: per step: calls of kernels only A runs (or the fall in count)
    vanished: float


def _per_step(trace: Trace) -> dict[str, tuple[float, float]]:
    """type -> (events per step, device time per step)."""
    types = kernel_types(trace)
    return {r.type: (r.events / types.steps, r.per_step_us) for r in types.rows}


def type_changes(
    a: Trace, b: Trace, new_rows, gone_rows, comparable: bool = True
) -> list[TypeChange]:
    """Every type either run has; `new_rows`/`gone_rows` are the diff's unmatched kernels.
    Across vendors (`comparable` false) nothing counts as appeared or vanished: a memset
    done by the runtime on one vendor may be a kernel on the other."""
    pa, pb = _per_step(a), _per_step(b)
    appeared: dict[str, float] = {}
    vanished: dict[str, float] = {}
    for r in new_rows:
        t = kernel_type_in(b, r.example)
        appeared[t] = appeared.get(t, 0.0) + r.calls_b
    for r in gone_rows:
        t = kernel_type_in(a, r.example)
        vanished[t] = vanished.get(t, 0.0) + r.calls_a
    out = []
    for t in KERNEL_TYPES:
        if t not in pa and t not in pb:
            continue
        ea, ua = pa.get(t, (0.0, 0.0))
        eb, ub = pb.get(t, (0.0, 0.0))
        if not comparable:
            up, down = 0.0, 0.0
        elif t in UNNAMED:
            up, down = max(eb - ea, 0.0), max(ea - eb, 0.0)
        else:
            up, down = appeared.get(t, 0.0), vanished.get(t, 0.0)
        out.append(TypeChange(t, ea, eb, ua, ub, up, down))
    return out


def counted(n: float) -> str:
    """A per-step count as words show it: whole numbers plainly, others to 2 significant digits."""
    return f"{n:.0f}" if abs(n - round(n)) < 0.05 else f"{n:.2g}"


def summary(changes: list[TypeChange], limit: int = 3) -> tuple[str, str]:
    """("768 device-to-device copies (0 -> 768 per step in all), ...", "...") per step:
    appeared, vanished (largest counts first; under half an event per step left out).
    The totals beside each count keep "7 convolution kernels vanished" from hiding
    that the type as a whole grew."""

    def words(pairs: list[tuple[float, TypeChange]]) -> str:
        pairs = sorted((p for p in pairs if p[0] >= 0.5), key=lambda p: -p[0])
        shown = [
            f"{counted(n)} {PLURAL[c.type]} "
            f"({counted(c.events_a)} -> {counted(c.events_b)} per step in all)"
            for n, c in pairs[:limit]
        ]
        more = f" and {len(pairs) - limit} more types" if len(pairs) > limit else ""
        return ", ".join(shown) + more

    return (
        words([(c.appeared, c) for c in changes]),
        words([(c.vanished, c) for c in changes]),
    )
