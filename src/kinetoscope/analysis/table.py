"""The profiler's `key_averages()` table, rebuilt from the trace file alone.

Rows group events by name and side (host or device) as the profiler does
(every `ProfilerStep#N` becomes `ProfilerStep*`). Host events (ops,
annotations, runtime/driver calls, Python frames) carry CPU time: total =
duration, self = duration minus direct children. Device events are rows of
their own (self device = duration), and each is also charged to the innermost
host op that launched it, which is how the profiler fills an op's device
columns. The closing totals follow `torch.autograd.profiler_util._build_table`:
Self CPU total sums every row's self CPU; Self device total sums device events
except GPU-side user annotations (the device copy of a `record_function` or
step).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..trace import Cat, Trace
from ..trace.categories import DEVICE_CATS
from ..trace.tree import minus_children
from .steps import device_anchor
from .window import in_window

STEP_PREFIX = "ProfilerStep#"
#: The row every ProfilerStep#N is grouped into.
STEP_ROW = "ProfilerStep*"


@dataclass(frozen=True)
class TableRow:
    name: str
    calls: int
    self_cpu_us: float
    cpu_total_us: float
    self_device_us: float
    device_total_us: float
    is_device: bool  # a device event row (kernel, memcpy, ...) rather than a host op

    @property
    def cpu_avg_us(self) -> float:
        return self.cpu_total_us / self.calls if self.calls else 0.0

    @property
    def device_avg_us(self) -> float:
        return self.device_total_us / self.calls if self.calls else 0.0


@dataclass(frozen=True)
class KeyAverages:
    rows: list[TableRow]
    self_cpu_total_us: float
    self_device_total_us: float
    has_device: bool

    def row(self, name: str) -> TableRow | None:
        return next((r for r in self.rows if r.name == name), None)


SORT_KEYS = {
    "self_cpu_time_total": lambda r: r.self_cpu_us,
    "cpu_time_total": lambda r: r.cpu_total_us,
    "self_device_time_total": lambda r: r.self_device_us,
    "device_time_total": lambda r: r.device_total_us,
    "self_cuda_time_total": lambda r: r.self_device_us,
    "cuda_time_total": lambda r: r.device_total_us,
    "count": lambda r: r.calls,
    "cpu_time": lambda r: r.cpu_avg_us,
    "device_time": lambda r: r.device_avg_us,
    "cuda_time": lambda r: r.device_avg_us,
}


def _group_names(trace: Trace) -> tuple[list[str], np.ndarray]:
    """Row label per interned name: ProfilerStep#N -> ProfilerStep*."""
    labels = [STEP_ROW if n.startswith(STEP_PREFIX) else n for n in trace.names]
    unique = sorted(set(labels))
    position = {label: i for i, label in enumerate(unique)}
    return unique, np.array([position[label] for label in labels] or [0], dtype=np.int64)


def key_averages(
    trace: Trace, sort_by: str = "self_cpu_time_total", window: bool = False
) -> KeyAverages:
    """All rows, sorted descending by `sort_by` (a profiler sort key).

    By default the whole trace, as the profiler's own table (what `kinetoscope
    table` compares to the exported `.txt`). With `window=True` only the active
    window counts: host events starting inside a profiled step and device work
    launched inside one, the window every other number of `explain` uses.
    """
    names, group_of_name = _group_names(trace)
    # the profiler keys rows by (name, device type): a kernel-side copy of a
    # step annotation is its own row, apart from the host ProfilerStep* row
    labels = [n for n in names for _side in (0, 1)]
    n_groups = len(labels)
    # one int32 per event (two int64 temporaries before: the largest arrays of the table)
    group = group_of_name.astype(np.int32)[trace.name_id]
    group *= 2
    group += trace.lane_kind == 2

    kept, parent = _collapse_repeated_names(trace)
    host = np.flatnonzero(kept).astype(parent.dtype)
    device = np.flatnonzero(trace.mask(*DEVICE_CATS) & (trace.lane_kind == 2))
    in_scope = np.ones(len(trace), dtype=bool)
    if window:
        in_scope[host] = in_window(trace, trace.ts, host)
        in_scope[device] = in_window(trace, device_anchor(trace), device)
        host, device = host[in_scope[host]], device[in_scope[device]]
    counted_device = device[trace.cat[device] != int(Cat.GPU_ANNOTATION)]

    # the host sums first, each temporary dropped after its sum: at 18.6 M events these
    # per-host-event arrays were the peak of `explain`'s memory
    host_group = group[host].astype(np.intp)  # bincount's own index type: cast once
    # self time of the rows' events only: the per-event array is dropped at once
    self_time = minus_children(trace.dur, parent, np.flatnonzero(kept & (parent >= 0)))[host]
    self_cpu = _group_sums(host_group, self_time, n_groups)
    self_cpu_total = float(self_time.sum())
    del self_time
    cpu_total = _group_sums(host_group, trace.dur[host], n_groups)
    calls = np.bincount(host_group, minlength=n_groups)
    del host_group
    calls += np.bincount(group[device], minlength=n_groups)
    self_device = _group_sums(group[device], trace.dur[device], n_groups)
    device_total = self_device.copy()

    # charge each device event to the op that launched it, and to that op's ancestors
    launched_by = trace.op_of[device]
    dropped = launched_by >= 0
    dropped[dropped] = ~kept[launched_by[dropped]]
    launched_by[dropped] = parent[launched_by[dropped]]  # kernels lift to the kept parent
    linked = launched_by >= 0
    linked[linked] = in_scope[launched_by[linked]]
    dev_linked = device[linked]
    owners = launched_by[linked]
    self_device += _group_sums(group[owners], trace.dur[dev_linked], n_groups)
    device_total += _charge_ancestors(
        parent, group, owners, trace.dur[dev_linked], n_groups, in_scope
    )

    is_device_group = np.arange(n_groups) % 2 == 1
    rows = [
        TableRow(
            name=labels[g],
            calls=int(calls[g]),
            self_cpu_us=float(self_cpu[g]),
            cpu_total_us=float(cpu_total[g]),
            self_device_us=float(self_device[g]),
            device_total_us=float(device_total[g]),
            is_device=bool(is_device_group[g]),
        )
        for g in np.flatnonzero(calls > 0)
    ]
    key = SORT_KEYS[sort_by]
    rows.sort(key=lambda r: (-key(r), r.name))
    return KeyAverages(
        rows=rows,
        self_cpu_total_us=self_cpu_total,
        self_device_total_us=float(trace.dur[counted_device].sum()),
        has_device=len(device) > 0,
    )


def _group_sums(groups: np.ndarray, values: np.ndarray, n: int) -> np.ndarray:
    """Per-group sums, float64 even for no events (bincount then gives int64 zeros)."""
    return np.bincount(groups, weights=values, minlength=n).astype(np.float64)


def _collapse_repeated_names(trace: Trace) -> tuple[np.ndarray, np.ndarray]:
    """The profiler's `EventList._remove_dup_nodes`: an event that is the only child
    of a parent with the same name (e.g. `aten::mean` calling `aten::mean`) is
    dropped and its children hang from that parent. Returns the kept host events
    and the parent of every event in the collapsed tree."""
    kept = trace.host_tree_mask.copy()
    parent = trace.parent.copy()
    name = trace.name_id
    while True:
        idx = np.flatnonzero(kept & (parent >= 0))
        up = parent[idx]
        only_child = np.bincount(up, minlength=len(trace))[up] == 1
        dup = idx[(name[up] == name[idx]) & only_child]
        if not len(dup):
            return kept, parent
        kept[dup] = False
        while True:  # re-hang children of dropped events on the nearest kept ancestor
            hanging = np.flatnonzero(parent >= 0)
            hanging = hanging[~kept[parent[hanging]]]
            if not len(hanging):
                break
            parent[hanging] = parent[parent[hanging]]


def _charge_ancestors(parent, group, owners, durations, n_groups, in_scope) -> np.ndarray:
    """Device total of a row: device time launched inside any of its events.

    Walks each launching op up the host tree; an ancestor with the same row
    name is charged once per device event, as the profiler's totals are summed
    per event. Ancestors outside `in_scope` (before the active window) are not
    charged.
    """
    totals = np.zeros(n_groups)
    current = owners.copy()
    for _ in range(512):
        alive = current >= 0
        if not alive.any():
            break
        idx = current[alive]
        np.add.at(totals, group[idx], np.where(in_scope[idx], durations[alive], 0.0))
        current[alive] = parent[idx]
    return totals


def window_key_averages(trace: Trace) -> KeyAverages:
    """The table over the active window (the profiled steps), sorted by self CPU time."""
    return key_averages(trace, window=True)


#: What every op and kernel share in kinetoscope is a share of, as printed beside
#: the share: the closing totals of the profiler's table counted over the active
#: window. `summary`, explain's `hotspot` and the HTML op and kernel tables all
#: divide by these, so a row shows one percentage everywhere (and `table --window`
#: prints the same totals).
HOST_SHARE_BASE = "of self CPU time in the active window"
DEVICE_SHARE_BASE = "of self device time in the active window"


@dataclass(frozen=True)
class Ranked:
    """A table row ranked by self time, with its share of the side's closing total."""

    name: str
    calls: int
    total_us: float
    share: float


def ranked_host(table: KeyAverages) -> list[Ranked]:
    """Host rows (ops, annotations, runtime calls, Python frames; not `ProfilerStep*`,
    which only frames the others) by self CPU time, as shares of `self_cpu_total_us`."""
    rows = [r for r in table.rows if not r.is_device and r.name != STEP_ROW and r.calls]
    return _ranked(rows, lambda r: r.self_cpu_us, table.self_cpu_total_us)


def ranked_device(table: KeyAverages, work_names: set[str]) -> list[Ranked]:
    """Device work rows (kernels, copies, memsets named in `work_names`, not the device
    copies of annotations) by self device time, as shares of `self_device_total_us`."""
    rows = [r for r in table.rows if r.is_device and r.name in work_names]
    return _ranked(rows, lambda r: r.self_device_us, table.self_device_total_us)


def work_names(trace: Trace) -> set[str]:
    """Names of device work (kernels, copies, memsets), not the device copies of annotations."""
    return {trace.names[i] for i in np.unique(trace.name_id[trace.device_work])}


def _ranked(rows: list[TableRow], value, total: float) -> list[Ranked]:
    ordered = sorted(rows, key=lambda r: (-value(r), r.name))
    return [
        Ranked(r.name, r.calls, value(r), value(r) / total if total > 0 else 0.0)
        for r in ordered
        if value(r) > 0
    ]
