"""What torch.compile leaves in a trace, as typed records.

At run time every call of a compiled function shows up as
`TorchDynamo Cache Lookup` (the guard check), then `Torch-Compiled Region: K/M`
(K = the frame Dynamo compiled, M = which compilation of that frame; a graph
break makes a new frame, a recompile a new M) wrapping `Pregraph bytecode`,
`AOTDispatcher Runtime Wrapper Prologue` and `## Call CompiledFxGraph <hash> ##`
(the Inductor graph; its children are the ops/kernels it runs). Torch 2.1 wrote
`Torch-Compiled Region` without K/M. Compilation itself (the first call, or a
recompile) appears as `dynamo`, `entire_frame_compile`, `backend_compile`,
`inductor_compile`, `... (dynamo_timed)` ops and `..._data: compile_id=K/M`
annotations (checked against torch 2.13 CPU traces and the corpus), or, in
traces recorded with stacks, as Python frames of `torch/_dynamo` and
`torch/_inductor` compile functions.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np

from ..trace import Cat, Trace
from .stepmap import step_numbers

REGION_RE = re.compile(r"^Torch-Compiled Region(?::\s*(\d+)/(\d+))?$")
GRAPH_CALL_RE = re.compile(r"^## Call CompiledFxGraph (\S+) ##$")
CACHE_LOOKUP = "TorchDynamo Cache Lookup"
AOT_PROLOGUE = "AOTDispatcher Runtime Wrapper Prologue"
PREGRAPH = "Pregraph bytecode"
COMPILED_FUNCTION = "CompiledFunction"
COMPILE_OPS = frozenset(
    {
        "dynamo",
        "entire_frame_compile",
        "backend_compile",
        "inductor_compile",
        "code_gen",
        "compile_file",
        "_compile.compile_inner",
        "compile_fx_inner",
        "OutputGraph.call_user_compiler",
        "fx_codegen_and_compile",
        "create_aot_dispatcher_function",
    }
)
COMPILE_DATA_RE = re.compile(r"_data: .*compile_id=")
COMPILE_ID_RE = re.compile(r"compile_id=(\d+/\d+)")
PY_COMPILE_RE = re.compile(
    r"torch/_(?:dynamo|inductor|functorch)/\S+\(\d+\): "
    r"(?:_compile|compile_inner|_compile_inner|compile_fx|compile_fx_inner|fx_codegen_and_compile"
    r"|codegen_and_compile|call_user_compiler|aot_module_simplified)$"
)


@dataclass(frozen=True)
class RegionCall:
    """One call of a compiled region."""

    index: int
    label: str  # "0/1", or "" for torch 2.1's unnumbered regions
    frame: int | None
    compile_id: int | None
    ts: float
    dur: float
    step: int | None
    graph_call: int  # index of `## Call CompiledFxGraph ##` inside, -1 if none
    graph_hash: str | None
    cache_lookup: int  # the guard check that preceded it, -1 if none
    lookup_us: float
    prologue_us: float  # AOTDispatcher prologue + pregraph bytecode inside the region
    ops_us: float  # host time of what the compiled graph ran (children of the graph call)
    #: time of region calls (and their guard checks) nested inside this one: after a graph
    #: break, the resumed frame's region runs inside the calling frame's region
    nested_us: float = 0.0
    work_end: float = 0.0  # end of the compiled work (graph call) inside the region

    @property
    def end(self) -> float:
        return self.ts + self.dur

    @property
    def host_us(self) -> float:
        """The call's host time with the guard check that preceded it."""
        return self.dur + self.lookup_us

    @property
    def wrapper_us(self) -> float:
        """CPU spent in the compiled wrapper stack rather than in the ops it runs."""
        return self.lookup_us + max(self.dur - self.ops_us - self.nested_us, 0.0)


class _ChildFinder:
    """Children of a host event, looking through Python frames (traces with stacks
    put `<built-in method ...>` frames between the region and its ops)."""

    def __init__(self, trace: Trace) -> None:
        self.trace = trace
        self.order = np.argsort(trace.ts, kind="stable")
        self.sorted_ts = trace.ts[self.order]
        self.python = trace.cat == int(Cat.PYTHON)

    def __call__(self, index: int) -> np.ndarray:
        t = self.trace
        lo = np.searchsorted(self.sorted_ts, t.ts[index], side="left")
        hi = np.searchsorted(self.sorted_ts, t.ts[index] + t.dur[index], side="right")
        cand = self.order[lo:hi]
        cand = cand[(t.lane[cand] == t.lane[index]) & ~self.python[cand] & (cand != index)]
        keep = []
        parent = t.parent
        for c in cand.tolist():
            p = int(parent[c])
            while p >= 0 and self.python[p]:
                p = int(parent[p])
            if p == index:
                keep.append(c)
        return np.array(sorted(keep), dtype=np.int64)


def region_calls(trace: Trace) -> list[RegionCall]:
    """Every compiled-region call on the host, in time order."""
    region_ids = {i: m for i, n in enumerate(trace.names) if (m := REGION_RE.match(n)) is not None}
    if not region_ids:
        return []
    host = trace.lane_kind == 1
    regions = np.flatnonzero(np.isin(trace.name_id, list(region_ids)) & host & ~trace.is_instant)
    regions = regions[np.argsort(trace.ts[regions], kind="stable")]
    lookup_id = trace.name_index.get(CACHE_LOOKUP, -2)
    lookups = np.flatnonzero((trace.name_id == lookup_id) & host)
    lookups = lookups[np.argsort(trace.end[lookups], kind="stable")]
    steps = step_numbers(trace, trace.ts[regions])
    children = _ChildFinder(trace)
    out = []
    for k, r in enumerate(regions.tolist()):
        m = region_ids[int(trace.name_id[r])]
        kids = children(r)
        graph_call, graph_hash, prologue, ops, nested = -1, None, 0.0, 0.0, 0.0
        work_end = float(trace.ts[r])
        for c in kids.tolist():
            name = trace.name(c)
            gm = GRAPH_CALL_RE.match(name)
            if gm and graph_call < 0:
                graph_call, graph_hash = c, gm.group(1)
                work_end = float(trace.end[c])
            elif name in (AOT_PROLOGUE, PREGRAPH):
                prologue += float(trace.dur[c])
            elif name == CACHE_LOOKUP or int(trace.name_id[c]) in region_ids:
                nested += float(trace.dur[c])
            elif name == COMPILED_FUNCTION and graph_call < 0:
                work_end = max(work_end, float(trace.end[c]))
        if graph_call >= 0:
            inner = children(graph_call)
            # Inductor's CPU code runs its C++ kernels inline: no child ops, the call is the work
            ops = float(trace.dur[inner].sum()) if len(inner) else float(trace.dur[graph_call])
        else:  # no Inductor graph call (other backends): everything inside is the work
            ops = float(trace.dur[kids].sum()) - prologue - nested
        # the guard check is the lookup on the same thread that ended last before the region
        lookup, lookup_us = -1, 0.0
        same = lookups[trace.lane[lookups] == trace.lane[r]]
        pos = np.searchsorted(trace.end[same], trace.ts[r], side="right") - 1
        if pos >= 0 and trace.ts[r] - trace.end[same[pos]] < max(trace.dur[r], 1000.0):
            lookup = int(same[pos])
            lookup_us = float(trace.dur[lookup])
        out.append(
            RegionCall(
                index=int(r),
                label=f"{m.group(1)}/{m.group(2)}" if m.group(1) else "",
                frame=int(m.group(1)) if m.group(1) else None,
                compile_id=int(m.group(2)) if m.group(2) else None,
                ts=float(trace.ts[r]),
                dur=float(trace.dur[r]),
                step=None if steps[k] < 0 else int(steps[k]),
                graph_call=graph_call,
                graph_hash=graph_hash,
                cache_lookup=lookup,
                lookup_us=lookup_us,
                prologue_us=prologue,
                ops_us=max(ops, 0.0),
                nested_us=nested,
                work_end=work_end,
            )
        )
    return out


#: host events that are torch.compile's own machinery, not the user's eager code
WRAPPER_NAMES = frozenset({CACHE_LOOKUP, AOT_PROLOGUE, PREGRAPH, COMPILED_FUNCTION})


def eager_between(trace: Trace, a: RegionCall, b: RegionCall) -> tuple[float, list[int]]:
    """Where the eager code between two region calls starts, and its outermost ops.

    After a graph break the resumed frame's region may run inside the first
    region (called from its bytecode); the eager code then sits between the
    first region's compiled work and the second region.
    """
    lo = a.end if b.ts >= a.end else a.work_end
    hi = b.ts
    if b.cache_lookup >= 0 and trace.ts[b.cache_lookup] >= lo:
        hi = float(trace.ts[b.cache_lookup])
    lane = trace.lane[a.index]
    idx = trace.events_in(lo, hi, trace.mask(Cat.CPU_OP) & (trace.lane == lane))
    idx = idx[trace.end[idx] <= hi + 1e-3]
    keep = []
    for i in idx.tolist():
        name = trace.name(i)
        if name in WRAPPER_NAMES or REGION_RE.match(name) or _is_compile_name(name):
            continue
        p = int(trace.parent[i])
        nested = False
        while p >= 0:
            if trace.ts[p] >= lo and trace.end[p] <= hi + 1e-3 and trace.cat[p] != int(Cat.PYTHON):
                nested = True  # counted with (or excluded as) its ancestor inside the gap
                break
            p = int(trace.parent[p])
        if not nested:
            keep.append(i)
    return lo, keep


def cache_lookups(trace: Trace) -> np.ndarray:
    """`TorchDynamo Cache Lookup` events on host threads, in time order."""
    nid = trace.name_index.get(CACHE_LOOKUP)
    if nid is None:
        return np.zeros(0, dtype=np.int64)
    idx = np.flatnonzero((trace.name_id == nid) & (trace.lane_kind == 1))
    return idx[np.argsort(trace.ts[idx], kind="stable")]


def _is_compile_name(name: str) -> bool:
    return (
        name in COMPILE_OPS
        or name.endswith(" (dynamo_timed)")
        or bool(COMPILE_DATA_RE.search(name))
        or bool(PY_COMPILE_RE.search(name))
    )


def compile_events(trace: Trace) -> np.ndarray:
    """Outermost compilation events (a compile's whole span, not its inner passes)."""
    ids = trace.name_ids_matching(_is_compile_name)
    if not len(ids):
        return np.zeros(0, dtype=np.int64)
    mask = np.isin(trace.name_id, ids) & (trace.lane_kind == 1) & ~trace.is_instant
    mask &= trace.mask(Cat.CPU_OP, Cat.USER_ANNOTATION, Cat.PYTHON)
    idx = np.flatnonzero(mask)
    outer = []
    for i in idx.tolist():
        p = int(trace.parent[i])
        nested = False
        while p >= 0:
            if mask[p]:
                nested = True
                break
            p = int(trace.parent[p])
        if not nested:
            outer.append(i)
    out = np.array(outer, dtype=np.int64)
    return out[np.argsort(trace.ts[out], kind="stable")]


def compile_id_of(trace: Trace, index: int) -> str | None:
    """`K/M` of a compilation event, from the `..._data: compile_id=K/M` annotation inside it."""
    inner = trace.events_in(trace.ts[index], trace.end[index], trace.lane == trace.lane[index])
    for j in inner[:400].tolist():
        m = COMPILE_ID_RE.search(trace.name(j))
        if m:
            return m.group(1)
    return None


def compiling_steps(trace: Trace) -> set[int | None]:
    """Steps (None: outside every step) in which Dynamo/Inductor compiled: what they show
    (extra regions, copies, syncs, idle device) belongs to compilation, not the steady state."""
    events = compile_events(trace)
    if not len(events):
        return set()
    steps = step_numbers(trace, trace.ts[events])
    return {None if s < 0 else int(s) for s in steps.tolist()}


def during_compilation(trace: Trace, events: np.ndarray, start: float, end: float) -> bool:
    """Whether [start, end] overlaps one of the compilation `events` (from compile_events)."""
    if not len(events):  # asked once per gap or step: skip the array work when none compiled
        return False
    return bool(np.any((trace.ts[events] < end) & (trace.end[events] > start)))
