"""Each LLM pass split by what held it: the window account's classes inside the pass.

The window account (`analysis.account.account`) gives every instant of the window
to one class: the device running, the host in Python, dispatching ops and launches,
or blocked in a wait. A pass is an interval of that window, so its split is the
account's class time inside the interval: a decode pass that is mostly `dispatch`
is host-bound, one that is mostly `device` is not. `waits` joins the sync stalls and
the waits on something outside the trace; `other` is the rest of the pass (data
waits, one-time and profiler work, untraced time, or the part of a pass outside the
profiled window), so the four and `other` add up to the pass's duration.
"""

from __future__ import annotations

from ..trace import Trace
from .account import sets
from .account.account import window_account
from .llm_passes import Pass

#: The split's parts, in the order every renderer shows them; each joins account classes.
SPLIT = {
    "device": ("device",),
    "python": ("python",),
    "dispatch": ("dispatch",),
    "waits": ("sync_stall", "external"),
}


def pass_split(trace: Trace, p: Pass) -> dict[str, float]:
    """The pass's time per split part (us), and `other` for the rest of its duration."""
    parts = window_account(trace).parts
    out = {
        key: sum(sets.length_within(parts[c], p.start, p.end) for c in classes)
        for key, classes in SPLIT.items()
    }
    out["other"] = max(0.0, p.dur - sum(out.values()))
    return out
