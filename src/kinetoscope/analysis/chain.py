"""The dispatch chain: how a kernel came to run.

`ProfilerStep#N -> record_function annotation -> aten::linear -> aten::addmm ->
cudaLaunchKernel -> kernel` is rebuilt from two links the Trace already has:
host nesting per thread (`trace.parent`) and launch -> kernel correlation
(`trace.launch_of`). `chain_of` gives one kernel's path; `build_tree` merges
the paths of many kernels into one tree (shared ancestors once) with the device
time of the kernels under each node, which is what `kinetoscope chain` prints
and what the `dispatch-chain` rule quotes.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ..errors import UsageError
from ..trace import Cat, Trace
from ..trace.patterns import name_pattern
from ..trace.steps import STEP_RE
from ..trace.tree import ancestors
from .kernel_names import decoded
from .stepmap import device_steps


def chain_of(trace: Trace, device_index: int) -> list[int]:
    """Host events from the outermost (usually ProfilerStep#N) down to the launch call.

    Where step spans overlap by a few us (one step "containing" the next), only
    the innermost ProfilerStep is kept: the kernel belongs to that step.
    """
    launch = int(trace.launch_of[device_index])
    if launch < 0:
        return []
    path = ancestors(trace, launch)
    steps = [k for k, i in enumerate(path) if STEP_RE.match(trace.name(i))]
    if len(steps) > 1:
        drop = set(steps[:-1])
        path = [i for k, i in enumerate(path) if k not in drop]
    return path


def chain_text(trace: Trace, device_index: int, skip_python: bool = True) -> str:
    """`ProfilerStep#2 > aten::linear > aten::addmm > cudaLaunchKernel > <kernel short name>`."""
    names = [
        trace.name(i)
        for i in chain_of(trace, device_index)
        if not (skip_python and trace.cat[i] == int(Cat.PYTHON))
    ]
    return " > ".join([*names, decoded(trace, trace.name(device_index)).short])


def select_device_events(
    trace: Trace,
    kernel: str | None = None,
    op: str | None = None,
    step: int | None = None,
) -> np.ndarray:
    """Device work (kernels, memcpys, memsets) in time order, filtered.

    `kernel`: pattern (`trace/patterns.py`) matched on the device event's name; `op`:
    on the names of the host events on its chain; `step`: launched inside
    `ProfilerStep#step`. Raises UsageError for a bad pattern or a missing step.
    """
    kernel_re = name_pattern(kernel, "kernel")
    op_re = name_pattern(op, "op")
    idx = np.flatnonzero(trace.device_work)
    idx = idx[np.argsort(trace.ts[idx], kind="stable")]
    if step is not None:
        if step not in {s.number for s in trace.steps}:
            have = ", ".join(str(s.number) for s in trace.steps) or "none"
            raise UsageError(f"no ProfilerStep#{step} in the trace (steps: {have})")
        idx = idx[device_steps(trace, idx) == step]
    if kernel_re is not None:
        ok = {i for i, n in enumerate(trace.names) if kernel_re.search(n)}
        idx = idx[np.isin(trace.name_id[idx], np.array(sorted(ok), dtype=np.int32))]
    if op_re is not None:
        ok_names = {i for i, n in enumerate(trace.names) if op_re.search(n)}
        keep = [
            i
            for i in idx.tolist()
            if any(int(trace.name_id[h]) in ok_names for h in chain_of(trace, i))
        ]
        idx = np.array(keep, dtype=np.int64)
    return idx


@dataclass
class ChainNode:
    """One event in the merged tree; `index` -1 is the synthetic root."""

    index: int
    children: dict[int, ChainNode] = field(default_factory=dict)
    device_us: float = 0.0  # device time of the selected kernels under this node
    kernels: int = 0

    def add(self, path: list[int], device_us: float) -> None:
        node = self
        node.device_us += device_us
        node.kernels += 1
        for index in path:
            node = node.children.setdefault(index, ChainNode(index))
            node.device_us += device_us
            node.kernels += 1


def build_tree(trace: Trace, device_indices: np.ndarray, skip_python: bool = True) -> ChainNode:
    """Merge the chains of `device_indices` (kernels are the leaves)."""
    root = ChainNode(-1)
    for i in np.asarray(device_indices).tolist():
        path = [
            h for h in chain_of(trace, i) if not (skip_python and trace.cat[h] == int(Cat.PYTHON))
        ]
        root.add([*path, int(i)], float(trace.dur[i]))
    return root
