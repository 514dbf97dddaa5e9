"""Time per `nn.Module`, forward and backward, as a tree of module paths.

Where a trace was recorded with `with_stack=True` or `with_modules=True`, the profiler's
Python tracer writes one `python_function` event per module call, named
`nn.Module: <Class>_<n>` (`n` numbers the instances of a class), and a
`record_function` range may carry the same name; every op, launch call and Python frame
the call ran nests inside it on its thread. A module's path is the chain of module
events around it (`Sequential_0/Head_0/Linear_1`), the same in every step.

Forward: host time is the module events' durations; device time is the durations of
the kernels, copies and memsets whose launch call (correlation id) nests in the module,
so a kernel belongs to the module that queued it, wherever it ran on the device.

Backward: the autograd engine runs the backward nodes (`autograd::engine::
evaluate_function: AddmmBackward0`) outside any module, often on its own thread. Each
node carries the `Sequence number` of the forward op that made it, and a
`Fwd thread id` (the profiler's own id of the forward's thread, from 1; forward ops
write 0). The sequence counter is per thread and is read when an op starts and bumped
when the op makes its node, so the last op on the forward thread to start with a number
is the op that made the node with that number, or one nested in it: the node belongs to
that op's module. Forward threads are not named by the profiler's id, so a number seen
on two host threads is ambiguous and left unattributed.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ..trace import Trace
from .ancestry import ancestor_of_kind

MODULE_PREFIX = "nn.Module: "
#: what the one line says where a trace has no module ranges
HINT = (
    "no nn.Module ranges in this trace: record with torch.profiler.profile("
    "with_stack=True) or with_modules=True to get time per module"
)
#: the autograd engine's wrapper of each backward node
EVALUATE_PREFIX = "autograd::engine::evaluate_function"


@dataclass
class ModuleNode:
    """One module path in one direction (forward or backward), with its subtree.

    `calls` counts module calls forward and autograd nodes backward; times are summed
    over every call in the trace (not unions: nested modules are inside their parent's)."""

    name: str
    path: str
    kind: str  # "forward" or "backward"
    calls: int = 0
    host_us: float = 0.0
    device_us: float = 0.0
    kernels: int = 0
    heaviest: bool = False
    children: list[ModuleNode] = field(default_factory=list)


@dataclass
class ModuleView:
    forward: list[ModuleNode]
    backward: list[ModuleNode]
    #: which time the heaviest path follows: "device_us" where kernels ran under modules
    measure: str
    #: why backward is missing or partial, None where every node was placed
    backward_note: str | None
    #: backward nodes and their host time that no module could be given
    backward_unattributed: int = 0
    backward_unattributed_us: float = 0.0


def module_view(trace: Trace) -> ModuleView | None:
    """The forward and backward module trees, or None where the trace has no module ranges."""
    ids = trace.name_ids_matching(lambda n: n.startswith(MODULE_PREFIX))
    if not len(ids):
        return None
    is_module = np.isin(trace.name_id, ids) & trace.host_tree_mask & ~trace.is_instant
    mods = np.flatnonzero(is_module)
    if not len(mods):
        return None
    inner = ancestor_of_kind(trace, is_module, outermost=False)
    paths = _paths(trace, mods, inner)
    fwd: dict[str, ModuleNode] = {}
    for m in mods.tolist():
        node = _node(fwd, paths, m, trace, "forward")
        node.calls += 1
        node.host_us += float(trace.dur[m])
    work = np.flatnonzero(trace.device_work)
    launch = trace.launch_of[work]
    owner = np.where(launch >= 0, inner[np.maximum(launch, 0)], -1)
    _add_device(fwd, paths, trace, work, owner, "forward")
    bwd: dict[str, ModuleNode] = {}
    note, lost, lost_us = _backward(trace, inner, paths, bwd, work, launch)
    forward, backward = _tree(fwd, paths), _tree(bwd, paths)
    measure = "device_us" if any(n.device_us > 0 for n in forward + backward) else "host_us"
    _mark_heaviest(forward, measure)
    _mark_heaviest(backward, measure)
    return ModuleView(forward, backward, measure, note, lost, lost_us)


def _paths(trace: Trace, mods: np.ndarray, inner: np.ndarray) -> dict[int, str]:
    """Module event -> its path of module names, outermost first. Parents start before
    their children (or with them, and last longer), so (start, longest first) order
    names every parent before its children."""
    order = mods[np.lexsort((-trace.dur[mods], trace.ts[mods]))]
    parent = trace.parent
    paths: dict[int, str] = {}
    for m in order.tolist():
        up = int(parent[m])
        outer = int(inner[up]) if up >= 0 else -1
        name = trace.name(m)[len(MODULE_PREFIX) :].strip() or "?"
        above = paths.get(outer)
        paths[m] = f"{above}/{name}" if above else name
    return paths


def _node(table: dict[str, ModuleNode], paths, m: int, trace: Trace, kind: str) -> ModuleNode:
    path = paths[m]
    node = table.get(path)
    if node is None:
        node = table[path] = ModuleNode(path.rsplit("/", 1)[-1], path, kind)
    return node


def _add_device(table, paths, trace: Trace, work, owner, kind: str) -> None:
    """Each device event's duration to the module (or backward node's module) that
    `owner` names for it; own time only, `_tree` sums subtrees."""
    for w, m in zip(work.tolist(), owner.tolist(), strict=True):
        if m >= 0 and m in paths:
            node = _node(table, paths, m, trace, kind)
            node.device_us += float(trace.dur[w])
            node.kernels += 1


def _backward(trace: Trace, inner, paths, bwd, work, launch) -> tuple[str | None, int, float]:
    """Backward nodes placed in the module of the forward op that made them (module
    docstring): fills `bwd` with own times; returns (note, nodes lost, their host us)."""
    seq_events = np.fromiter(trace.sequence.keys(), np.int64, len(trace.sequence))
    if not len(seq_events):
        evaluate = trace.name_ids_matching(lambda n: n.startswith(EVALUATE_PREFIX))
        if len(evaluate) and np.isin(trace.name_id, evaluate).any():
            return (
                "backward not attributable: the trace keeps no autograd `Sequence number` "
                "on its ops",
                0,
                0.0,
            )
        return None, 0, 0.0
    seq = np.array([trace.sequence[i] for i in seq_events.tolist()], np.int64)
    thread = np.array([trace.fwd_thread.get(i, -1) for i in seq_events.tolist()], np.int64)
    is_node = np.zeros(len(trace), bool)
    is_node[seq_events[thread > 0]] = True
    top = ancestor_of_kind(trace, is_node, outermost=True)
    nodes = np.flatnonzero(top == np.arange(len(trace)))
    if not len(nodes):
        return None, 0, 0.0
    # the last forward op to start with each (thread, number): the op that made the node
    fwd = (thread <= 0) & (top[seq_events] < 0)
    made: dict[int, int] = {}
    lanes: dict[int, set[int]] = {}
    for e, s in sorted(
        zip(seq_events[fwd].tolist(), seq[fwd].tolist(), strict=True),
        key=lambda p: trace.ts[p[0]],
    ):
        made[s] = e
        lanes.setdefault(s, set()).add(int(trace.lane[e]))
    owner_of_node: dict[int, int] = {}
    lost, lost_us = 0, 0.0
    for n in nodes.tolist():
        s = trace.sequence.get(n, -1)
        op = made.get(s, -1) if len(lanes.get(s, ())) == 1 else -1
        module = int(inner[op]) if op >= 0 else -1
        if module < 0:
            lost += 1
            lost_us += float(trace.dur[n])
            continue
        owner_of_node[n] = module
        node = _node(bwd, paths, module, trace, "backward")
        node.calls += 1
        node.host_us += float(trace.dur[n])
    wrap = np.where(launch >= 0, top[np.maximum(launch, 0)], -1)
    owner = np.array([owner_of_node.get(n, -1) for n in wrap.tolist()], np.int64)
    _add_device(bwd, paths, trace, work, owner, "backward")
    note = None
    if lost:
        note = (
            f"{lost} backward node(s) not placed in a module: their forward op ran outside "
            "every module (a loss, a sum), or on a thread the trace cannot tell apart"
        )
    return note, lost, lost_us


def _tree(table: dict[str, ModuleNode], paths: dict[int, str]) -> list[ModuleNode]:
    """The paths in `table` with their ancestors, children under parents; backward and
    device times summed over each subtree (forward host time is already inclusive)."""
    for path in list(table):
        parts = path.split("/")
        for k in range(1, len(parts)):
            up = "/".join(parts[:k])
            if up not in table:
                table[up] = ModuleNode(parts[k - 1], up, table[path].kind)
    roots = []
    for path in sorted(table, key=lambda p: p.count("/")):
        node = table[path]
        if "/" in path:
            table[path.rsplit("/", 1)[0]].children.append(node)
        else:
            roots.append(node)
    for root in roots:
        _sum_subtree(root)
    return roots


def _sum_subtree(node: ModuleNode) -> None:
    for child in node.children:
        _sum_subtree(child)
        node.device_us += child.device_us
        node.kernels += child.kernels
        if node.kind == "backward":
            node.host_us += child.host_us
            node.calls += child.calls


def _mark_heaviest(roots: list[ModuleNode], measure: str) -> None:
    """Mark the heaviest root, then its heaviest child, down to a leaf."""
    level = roots
    while level:
        top = max(level, key=lambda n: getattr(n, measure))
        top.heaviest = True
        level = top.children
