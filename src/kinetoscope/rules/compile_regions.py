"""What the torch.compile rule modules share: the region calls, grouped by step.

`compile`, `compile_guards` and `compile_cost` all read the same `region_calls`
analysis; getting it through the rule context computes it once per trace.
"""

from __future__ import annotations

from collections import defaultdict

from ..analysis.compile import region_calls


def compiled_regions(ctx):
    """The trace's compiled-region calls, computed once per trace."""
    return ctx.analysis(region_calls)


def calls_by_step(calls) -> dict[int | None, list]:
    """Region calls per step number (None outside steps), in call order: a step's
    regions are what graph breaks and per-step guard costs are counted over."""
    out: dict[int | None, list] = defaultdict(list)
    for c in calls:
        out[c.step].append(c)
    return out


def step_prefix(step: int | None) -> str:
    """`step #3: ` to open an evidence line, nothing in a trace without steps."""
    return f"step #{step}: " if step is not None else ""
