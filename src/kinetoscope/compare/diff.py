"""The diff of two runs of one program: what changed per step, on the device and the host.

Two traces (eager vs compiled, before vs after a change) are compared step by
step (medians, and each step side by side), then kernel by kernel (matched by
decoded identity: an unchanged name means identical device work, a changed one
means the dispatcher took another branch), then host op by host op (what
appeared, vanished or changed cost), then finding by finding. `conclusion`
turns that into one paragraph. Kernels on different vendors' devices cannot be
matched by name; the diff says so instead of listing every kernel as new.
"""

from __future__ import annotations

from difflib import SequenceMatcher

import numpy as np

from ..analysis.kernel_names import decoded
from ..analysis.stats import trace_metrics, trace_stats
from ..analysis.steps import StepStats, step_stats
from ..analysis.syncs import sync_sites
from ..rules.base import SEVERITY_ORDER, Finding
from ..trace import Trace
from .aggregate import KernelGroup, OpGroup, kernel_groups, op_groups
from .decompose import decompose
from .diff_model import (
    FindingRow,
    KernelDiff,
    KernelRow,
    OpRow,
    Run,
    Side,
    StepPair,
    TraceDiff,
    Waits,
)
from .environment import environment_diff
from .kernels import family, identify_kernel, identify_kind, variant_change
from .names import readable
from .types import type_changes

#: A per-step cost changed when it moved by more than this share of A's value ...
RELATIVE_TOLERANCE = 0.10
#: ... and by more than this many microseconds per step (timer noise on tiny events).
ABSOLUTE_TOLERANCE_US = 1.0


def changed(a: float, b: float) -> bool:
    """Whether a per-step cost moved beyond timer noise."""
    return abs(b - a) > max(RELATIVE_TOLERANCE * abs(a), ABSOLUTE_TOLERANCE_US)


def vendors(trace: Trace) -> list[str]:
    """GPU vendors of a trace: from its device properties, else from its launch calls."""
    named = {d.vendor for d in trace.devices if d.vendor}
    if named:
        return sorted(named)
    launches = {trace.names[i] for i in np.unique(trace.name_id[trace.launches])}
    inferred = {"AMD" if n.startswith("hip") else "NVIDIA" for n in launches}
    return sorted(inferred)


def side(run: Run, stats: list[StepStats]) -> Side:
    """The run's figures as `analysis.stats` computes them for every command."""
    trace = run.trace
    m = trace_metrics(trace)
    return Side(
        path=trace.path,
        steps=len(stats),
        has_steps=bool(trace.steps),
        devices=[d.name for d in trace.devices],
        vendors=vendors(trace),
        regime=run.regime,
        step_time_us=m["step_time_us"],
        host_time_us=m["host_time_per_step_us"],
        device_busy_us=m["device_busy_per_step_us"],
        device_busy_ratio=m["device_busy_ratio"],
        kernels_per_step=m["kernels_per_step"],
        launches_per_step=m["launches_per_step"],
        device_paced=bool(stats)
        and m["step_time_us"] > float(np.median([s.dur for s in stats])) * 1.01,
    )


def pair_steps(a: list[StepStats], b: list[StepStats]) -> list[StepPair]:
    """Steps side by side in order (step numbers differ between runs)."""
    return [
        StepPair(i, a[i] if i < len(a) else None, b[i] if i < len(b) else None)
        for i in range(max(len(a), len(b)))
    ]


def cross_vendor_reason(a: Side, b: Side) -> str:
    """Non-empty when the two runs use different vendors' devices."""
    if not a.vendors or not b.vendors or set(a.vendors) & set(b.vendors):
        return ""
    return (
        f"A ran on {'/'.join(a.vendors)} ({', '.join(a.devices)}) and B on "
        f"{'/'.join(b.vendors)} ({', '.join(b.devices)}): kernel names come from each "
        "vendor's libraries and compilers, so kernels cannot be matched by name; "
        "they are compared by kind of work (gemm, attention, elementwise, ...) instead"
    )


def _kernel_row(key: str, ga: KernelGroup | None, gb: KernelGroup | None, na: int, nb: int):
    calls_a = ga.calls / na if ga else 0.0
    calls_b = gb.calls / nb if gb else 0.0
    us_a = ga.total_us / na if ga else 0.0
    us_b = gb.total_us / nb if gb else 0.0
    if ga is None:
        status = "new"
    elif gb is None:
        status = "gone"
    elif abs(calls_a - calls_b) >= 0.5 or changed(us_a, us_b):
        status = "changed"
    else:
        status = "unchanged"
    some = ga or gb
    return KernelRow(key, some.display, status, calls_a, calls_b, us_a, us_b, some.example)


def diff_kernels(run_a: Run, run_b: Run, a: Side, b: Side) -> KernelDiff:
    groups_a = kernel_groups(run_a.trace, identify_kernel)
    groups_b = kernel_groups(run_b.trace, identify_kernel)
    reason = cross_vendor_reason(a, b)
    if reason:
        top_a = sorted(
            (_kernel_row(k, g, None, a.steps, b.steps) for k, g in groups_a.items()),
            key=lambda r: -r.us_a,
        )
        top_b = sorted(
            (_kernel_row(k, None, g, a.steps, b.steps) for k, g in groups_b.items()),
            key=lambda r: -r.us_b,
        )
        kinds_a = kernel_groups(run_a.trace, identify_kind)
        kinds_b = kernel_groups(run_b.trace, identify_kind)
        by_kind = [
            _kernel_row(k, kinds_a.get(k), kinds_b.get(k), a.steps, b.steps)
            for k in kinds_a.keys() | kinds_b.keys()
        ]
        by_kind.sort(key=lambda r: (-max(r.us_a, r.us_b), r.key))
        return KernelDiff(False, reason, by_kind=by_kind, top_a=top_a[:5], top_b=top_b[:5])
    rows = [
        _kernel_row(k, groups_a.get(k), groups_b.get(k), a.steps, b.steps)
        for k in groups_a.keys() | groups_b.keys()
    ]
    rows.sort(key=lambda r: (-max(r.us_a, r.us_b), r.key))
    disambiguate(rows)
    return KernelDiff(True, "", pair_variants(rows, run_a.trace, run_b.trace))


def pair_variants(rows: list[KernelRow], a: Trace, b: Trace) -> list[KernelRow]:
    """Fold a gone kernel (its name is `a`'s) and a new one (`b`'s) of the same family into
    one `replaced` row.

    Each new kernel pairs with the gone kernel of its family whose name is the
    most alike (difflib ratio); what is left over stays gone or new.
    """
    gone_by_family: dict[str, list[KernelRow]] = {}
    for r in rows:
        if r.status == "gone":
            gone_by_family.setdefault(family(a, r.example), []).append(r)
    dropped = set()
    for n in [r for r in rows if r.status == "new"]:
        candidates = gone_by_family.get(family(b, n.example))
        if not candidates:
            continue
        g = max(candidates, key=lambda c: SequenceMatcher(None, c.example, n.example).ratio())
        candidates.remove(g)
        g.status = "replaced"
        g.calls_b, g.us_b = n.calls_b, n.us_b
        g.replacement = n.display
        g.change = variant_change(decoded(a, g.example), decoded(b, n.example))
        dropped.add(id(n))
    return [r for r in rows if id(r) not in dropped]


def disambiguate(rows: list[KernelRow], width: int = 90) -> None:
    """Rows whose short names collide (template variants) show their raw name instead."""
    counts: dict[str, int] = {}
    for r in rows:
        counts[r.display] = counts.get(r.display, 0) + 1
    for r in rows:
        if counts[r.display] > 1:
            r.display = r.example if len(r.example) <= width else r.example[: width - 3] + "..."


def _op_row(name: str, ga: OpGroup | None, gb: OpGroup | None, na: int, nb: int) -> OpRow:
    row = OpRow(
        name,
        "",
        ga.calls / na if ga else 0.0,
        gb.calls / nb if gb else 0.0,
        ga.self_us / na if ga else 0.0,
        gb.self_us / nb if gb else 0.0,
        ga.total_us / na if ga else 0.0,
        gb.total_us / nb if gb else 0.0,
    )
    if ga is None:
        row.status = "appeared"
    elif gb is None:
        row.status = "vanished"
    elif abs(row.calls_a - row.calls_b) >= 0.5 or changed(row.self_us_a, row.self_us_b):
        row.status = "changed"
    else:
        row.status = "unchanged"
    return row


def vendor_neutral(name: str) -> str:
    """HIP runtime calls under their CUDA names, so hipLaunchKernel meets cudaLaunchKernel."""
    return "cuda" + name[3:] if name.startswith("hip") else name


def _by_readable_name(groups: dict[str, OpGroup], neutral: bool) -> dict[str, OpGroup]:
    """Op groups keyed by their readable name (`names.readable`, under CUDA names across
    vendors); groups whose names differ only in a generated hash are summed."""
    out: dict[str, OpGroup] = {}
    for name, g in groups.items():
        key = readable(vendor_neutral(name) if neutral else name)
        had = out.get(key) or OpGroup(key, 0, 0.0, 0.0)
        out[key] = OpGroup(
            key, had.calls + g.calls, had.self_us + g.self_us, had.total_us + g.total_us
        )
    return out


def diff_ops(run_a: Run, run_b: Run, a: Side, b: Side, cross_vendor: bool) -> list[OpRow]:
    raw = [*op_groups(run_a.trace), *op_groups(run_b.trace)]
    groups_a = _by_readable_name(op_groups(run_a.trace), cross_vendor)
    groups_b = _by_readable_name(op_groups(run_b.trace), cross_vendor)
    shown: dict[str, dict[str, None]] = {}  # key -> each vendor's readable name
    for name in raw:
        key = readable(vendor_neutral(name) if cross_vendor else name)
        shown.setdefault(key, {})[readable(name)] = None
    rows = []
    for key in groups_a.keys() | groups_b.keys():
        row = _op_row(key, groups_a.get(key), groups_b.get(key), a.steps, b.steps)
        row.name = " | ".join(shown[key])  # cudaLaunchKernel | hipLaunchKernel
        rows.append(row)
    rows.sort(key=lambda r: (-abs(r.self_us_b - r.self_us_a), r.name))
    return rows


def _worst(findings: list[Finding]) -> dict[str, tuple[str, str, float]]:
    """finding id -> (worst severity, title, summed impact)."""
    out: dict[str, tuple[str, str, float]] = {}
    for f in findings:
        # a finding folded into another on the same cause fired too; the saving is counted once
        for fid, saving in ((f.id, float(f.impact_us)), *((m, 0.0) for m in f.merged)):
            sev, title, impact = out.get(fid, (f.severity, f.title, 0.0))
            if SEVERITY_ORDER[f.severity] < SEVERITY_ORDER[sev]:
                sev, title = f.severity, f.title
            out[fid] = (sev, title, impact + saving)
    return out


def diff_findings(a: list[Finding], b: list[Finding]) -> list[FindingRow]:
    worst_a, worst_b = _worst(a), _worst(b)
    rows = []
    for fid in sorted(worst_a.keys() | worst_b.keys()):
        sa, sb = worst_a.get(fid), worst_b.get(fid)
        if sa is None:
            status = "appeared"
        elif sb is None:
            status = "disappeared"
        elif sa[0] != sb[0]:
            status = "severity changed"
        else:
            status = "unchanged"
        rows.append(
            FindingRow(
                fid,
                status,
                sa[0] if sa else None,
                sb[0] if sb else None,
                (sb or sa)[1],
                sa[2] if sa else 0.0,
                sb[2] if sb else 0.0,
            )
        )
    order = {"appeared": 0, "disappeared": 1, "severity changed": 2, "unchanged": 3}
    rows.sort(key=lambda r: (order[r.status], r.id))
    return rows


def waits(trace: Trace) -> Waits:
    """Host time blocked on the device over the window, from `analysis.syncs`."""
    sites = sync_sites(trace)
    by_site: dict[tuple[str, str], float] = {}
    for s in sites:
        around = s.index if s.kind == "scalar read" else s.context
        where = readable(trace.name(around)) if around >= 0 else ""
        by_site[(s.held_by, where)] = by_site.get((s.held_by, where), 0.0) + s.wait_us
    top = max(by_site.items(), key=lambda kv: kv[1], default=(("", ""), 0.0))[0]
    return Waits(
        total_us=sum(s.wait_us for s in sites),
        sites=len(sites),
        top_call=top[0],
        top_site=top[1],
        window_us=trace_stats(trace).window_us,
    )


def diff_runs(run_a: Run, run_b: Run) -> TraceDiff:
    """Compare two runs; `conclusion` holds the plain-words summary."""
    from ..analysis.attention import backend_change
    from .comm_diff import comm_diff
    from .conclusion import conclude
    from .kernel_view_diff import kernel_view_diff
    from .llm_diff import llm_diff, llm_sentence
    from .modules_diff import modules_diff
    from .moe_diff import moe_diff

    stats_a, stats_b = step_stats(run_a.trace), step_stats(run_b.trace)
    a, b = side(run_a, stats_a), side(run_b, stats_b)
    kernels = diff_kernels(run_a, run_b, a, b)
    result = TraceDiff(
        a=a,
        b=b,
        steps=pair_steps(stats_a, stats_b),
        kernels=kernels,
        ops=diff_ops(run_a, run_b, a, b, cross_vendor=bool(cross_vendor_reason(a, b))),
        findings=diff_findings(run_a.findings, run_b.findings),
        environment=environment_diff(
            run_a.trace, run_b.trace, a.vendors, b.vendors, (a.steps, b.steps)
        ),
        decomposition=decompose(trace_stats(run_a.trace), trace_stats(run_b.trace)),
        types=type_changes(
            run_a.trace,
            run_b.trace,
            kernels.by_status("new"),
            kernels.by_status("gone"),
            kernels.comparable,
        ),
        waits=(waits(run_a.trace), waits(run_b.trace)),
    )
    result.llm = llm_diff(run_a.trace, run_b.trace)  # owned by compare/llm_diff.py
    result.communication = comm_diff(run_a.trace, run_b.trace)  # compare/comm_diff.py
    result.moe = moe_diff(run_a.trace, run_b.trace)  # owned by compare/moe_diff.py
    result.modules = modules_diff(run_a.trace, run_b.trace)  # compare/modules_diff.py
    result.kernel_view = kernel_view_diff(run_a.trace, run_b.trace)  # compare/kernel_view_diff.py
    result.conclusion = conclude(result)
    if generation := llm_sentence(result.llm):  # owned by compare/llm_diff.py
        result.conclusion = f"{result.conclusion} {generation}"
    if attention := backend_change(run_a.trace, run_b.trace):  # owned by analysis/attention.py
        result.conclusion = f"{attention} {result.conclusion}"
    return result
