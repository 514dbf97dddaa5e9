"""Dispatch-chain rules: how ops became kernels (docs/rules.md, "Dispatch chain")."""

from __future__ import annotations

from collections import Counter, defaultdict

import numpy as np

from ..analysis.chain import chain_text
from ..analysis.dispatch import (
    ADD_OPS,
    GEMM_OPS,
    Children,
    instances,
    metadata_only,
    op_work,
)
from ..analysis.gpu_lane import kernel_totals
from ..analysis.kernel_names import decoded
from ..analysis.stepmap import (
    device_steps,
    host_cost_by_step,
    step_count,
    step_of,
    step_or_none,
)
from ..formatting.units import count, fmt_us, share_of
from ..trace import Cat
from .advice import compiled_run, cuda_graphs_fit
from .base import Evidence, Finding, NotChecked, rule
from .impact import host_cost_hidden
from .requires import NO_LINKS, need_kernels

CPU_OP = int(Cat.CPU_OP)
MEMCPY = int(Cat.MEMCPY)


@rule(
    "dispatch-chain",
    "dispatch-chain",
    "step -> annotation -> aten op -> runtime call -> kernel, for the top kernels",
    top=3,
)
def dispatch_chain(ctx) -> list[Finding]:
    trace = ctx.trace
    need_kernels(trace)
    if not (trace.launch_of[trace.kernels] >= 0).any():
        raise NotChecked(*NO_LINKS)
    rows, total = kernel_totals(trace)
    evidence = []
    for row in rows[: int(ctx.threshold("top"))]:
        linked = row.instances[trace.launch_of[row.instances] >= 0]
        if not len(linked):
            continue
        pick = int(linked[np.argmax(trace.dur[linked])])
        evidence.append(
            Evidence(
                f"{chain_text(trace, pick)}  [{fmt_us(row.device_us, 1)} in "
                f"{count(row.calls, 'call')}, {share_of(row.device_us, total, 'kernel time')}]",
                name=trace.name(pick),
                ts_us=trace.rel(trace.ts[pick]),
                dur_us=float(trace.dur[pick]),
                step=step_or_none(int(device_steps(trace, np.array([pick]))[0])),
                value=row.device_us,
                unit="us",
            )
        )
    if not evidence:
        return []
    return [
        Finding(
            id="dispatch-chain",
            severity="info",
            title=f"dispatch chains of the top {count(len(evidence), 'kernel')}",
            explanation=(
                "Each line follows one kernel back to the code that caused it: the profiler "
                "step, your record_function annotations, the aten ops the dispatcher chose, and "
                "the runtime call that put the kernel on the stream (linked by correlation id)."
            ),
            suggestion=(
                "To speed up a kernel, change the op that launched it; `kinetoscope chain "
                "TRACE --kernel NAME` shows every path to it as a tree."
            ),
            impact_us=0.0,
            evidence=evidence,
            measured={"kernels_shown": len(evidence), "threshold_top": ctx.threshold("top")},
        )
    ]


def _first_gemm_child(trace, children: Children, index: int) -> str | None:
    """The GEMM aten op a matmul/linear reached, looking through one level of wrappers."""
    frontier = [index]
    for _ in range(3):
        nxt = []
        for i in frontier:
            for c in children.of(i).tolist():
                name = trace.name(c)
                if name in GEMM_OPS:
                    return name
                if trace.cat[c] == CPU_OP:
                    nxt.append(c)
        frontier = nxt
    return None


@rule(
    "matmul-dispatch",
    "dispatch-chain",
    "aten::matmul -> aten::mm (2D) or aten::bmm (batched, with extra ops)",
)
def matmul_dispatch(ctx) -> list[Finding]:
    trace = ctx.trace
    calls = instances(trace, ["aten::matmul"])
    if not len(calls):
        return []
    children = Children(trace)
    work = op_work(trace, calls)
    branches: dict[str, list[int]] = defaultdict(list)
    extras: dict[str, Counter] = defaultdict(Counter)
    for i in calls.tolist():
        branch = _first_gemm_child(trace, children, i) or "other"
        branches[branch].append(i)
        for c in children.of(i).tolist():
            name = trace.name(c)
            if name.startswith("aten::") and name not in GEMM_OPS:
                extras[branch][name] += 1
    evidence = []
    for branch, members in sorted(branches.items(), key=lambda kv: -len(kv[1])):
        idx = np.array(members)
        first = int(idx[0])
        extra = ", ".join(f"{n} x{c / len(idx):.1g}" for n, c in extras[branch].most_common(4))
        evidence.append(
            Evidence(
                f"aten::matmul -> {branch}: {len(idx)} calls, {fmt_us(trace.dur[idx].mean(), 1)} "
                "CPU "
                "per call"
                + (
                    f", {work.launches[idx].mean():.1f} launches and "
                    f"{fmt_us(work.device_us[idx].mean(), 1)} device per call"
                    if trace.has_device
                    else ""
                )
                + (f"; other ops per call: {extra}" if extra else ""),
                name="aten::matmul",
                ts_us=trace.rel(trace.ts[first]),
                dur_us=float(trace.dur[first]),
                step=step_of(trace, trace.ts[first]),
                value=float(len(idx)),
                unit="calls",
            )
        )
    batched = len(branches.get("aten::bmm", []))
    return [
        Finding(
            id="matmul-dispatch",
            severity="info",
            title=(
                f"aten::matmul dispatched {count(len(calls), 'time')}: "
                + ", ".join(f"{len(m)} -> {b}" for b, m in branches.items())
            ),
            explanation=(
                "aten::matmul is a router: 2D inputs go to aten::mm (one GEMM); inputs with "
                "batch dimensions go to aten::bmm after expand/reshape ops that fold the batch, "
                "which adds CPU work and sometimes extra runtime calls"
                + (f" ({count(batched, 'call')} took the batched path here)." if batched else ".")
            ),
            suggestion=(
                "For a plain linear layer keep the input 2D (flatten the batch into rows) so it "
                "reaches aten::mm/addmm; batched matmuls are fine when the batch is real."
            ),
            impact_us=0.0,
            evidence=evidence,
            measured={b: len(m) for b, m in branches.items()},
        )
    ]


@rule(
    "addmm-epilogue",
    "dispatch-chain",
    "aten::addmm instead of aten::mm + aten::add: the bias rides in the GEMM epilogue",
)
def addmm_epilogue(ctx) -> list[Finding]:
    trace = ctx.trace
    children = Children(trace)
    adds = instances(trace, ADD_OPS)
    pairs = []
    op_children: dict[int, np.ndarray] = {}  # parent -> its CPU-op children, time order
    for a in adds.tolist():
        p = int(trace.parent[a])
        if p < 0:
            continue
        if p not in op_children:
            kids = children.of(p)
            op_children[p] = kids[trace.cat[kids] == CPU_OP]
        siblings = op_children[p]
        before = int(np.searchsorted(trace.ts[siblings], trace.ts[a], side="left"))
        if not before:
            continue
        prev = int(siblings[before - 1])  # the last CPU op started before the add
        prev_name = trace.name(prev)
        if prev_name == "aten::mm" or (
            prev_name == "aten::matmul" and _first_gemm_child(trace, children, prev) == "aten::mm"
        ):
            pairs.append((prev, a))
    addmms = instances(trace, ["aten::addmm"])
    if not pairs and not len(addmms):
        return []
    ops = np.array(sorted({i for pr in pairs for i in pr} | set(addmms.tolist())), dtype=np.int64)
    work = op_work(trace, ops)
    on_device = trace.has_device
    if pairs:
        add_idx = np.array([a for _, a in pairs])
        cost = work.device_us[add_idx] if on_device else trace.dur[add_idx]
        impact = float(cost.sum()) / step_count(trace)
        evidence = []
        for k, (mm, a) in enumerate(pairs[:3]):
            evidence.append(
                Evidence(
                    f"{trace.name(mm)} then {trace.name(a)} "
                    + (
                        f"({fmt_us(work.device_us[a], 1)} of device time in its own kernel)"
                        if on_device
                        else f"({fmt_us(trace.dur[a], 1)} CPU)"
                    ),
                    name=trace.name(a),
                    ts_us=trace.rel(trace.ts[a]),
                    dur_us=float(trace.dur[a]),
                    step=step_of(trace, trace.ts[a]),
                    value=float(cost[k]),
                    unit="us",
                )
            )
        return [
            Finding(
                id="addmm-epilogue",
                severity="warn",
                title=f"{count(len(pairs), 'matmul')} followed by a separate add: use addmm",
                explanation=(
                    "A matrix multiply followed by adding a bias runs as two ops: a GEMM, then "
                    "an elementwise add that reads and writes the whole output again. aten::addmm "
                    "(what nn.Linear and torch.addmm call) does both in one GEMM: the bias is "
                    "added in the GEMM's epilogue"
                    + (
                        ", often after a device-to-device copy that seeds the output with the bias."
                        if trace.has_device
                        else " (on a CPU, the output is seeded with the bias, then the BLAS "
                        "call accumulates into it)."
                    )
                ),
                suggestion=(
                    "Write torch.addmm(b, x, w) or use nn.Linear / F.linear(x, w.T, b) instead of "
                    "x @ w + b; torch.compile also fuses the add."
                ),
                impact_us=impact,
                evidence=evidence,
                measured={"mm_add_pairs": len(pairs), "addmm_calls": int(len(addmms))},
            )
        ]
    evidence = []
    first = int(addmms[0])
    launched = [d for i in addmms.tolist() for d in work.device_events.get(i, [])]
    named = {d: decoded(trace, trace.name(d)) for d in launched}
    # the bias seeds the output: a memcpy or a copy kernel (not a memset: that zeroes)
    copies = [d for d in launched if trace.cat[d] == MEMCPY or "copy" in named[d].short.lower()]
    by_kernel = Counter(named[d].short for d in launched)
    biased = [named[d].short for d in launched if "bias" in named[d].epilogue]
    for short, n in by_kernel.most_common(4):
        d = next(d for d in launched if named[d].short == short)
        total = sum(float(trace.dur[x]) for x in launched if named[x].short == short)
        evidence.append(
            Evidence(
                f"aten::addmm launched {short} {count(n, 'time')}, {fmt_us(total, 1)} of device "
                "time",
                name=trace.name(d),
                ts_us=trace.rel(trace.ts[d]),
                dur_us=float(trace.dur[d]),
                step=step_or_none(int(device_steps(trace, np.array([d]))[0])),
                value=total,
                unit="us",
            )
        )
    evidence.append(
        Evidence(
            f"{count(len(addmms), 'aten::addmm call')}, "
            f"{fmt_us(trace.dur[addmms].mean(), 1)} CPU per call",
            name="aten::addmm",
            ts_us=trace.rel(trace.ts[first]),
            dur_us=float(trace.dur[first]),
            step=step_of(trace, trace.ts[first]),
            value=float(len(addmms)),
            unit="calls",
        )
    )
    return [
        Finding(
            id="addmm-epilogue",
            severity="info",
            title=f"{count(len(addmms), 'aten::addmm call')}: bias fused into the GEMM epilogue",
            explanation=(
                "aten::addmm is matmul plus bias fused at the dispatcher level: the GEMM kernel "
                "is the same one aten::mm would run, the bias rides in its epilogue"
                + (f" ({biased[0]} says so: epilogue bias)" if biased else "")
                + (
                    ", after a device-to-device copy that seeds the output with the bias "
                    f"(seen here: {named[copies[0]].short})."
                    if copies
                    else "."
                )
            ),
            suggestion=(
                "Nothing to change; when comparing runs, expect the same GEMM kernel name for "
                "addmm and mm and an extra copy for the bias."
            ),
            impact_us=0.0,
            evidence=evidence,
            measured={"addmm_calls": int(len(addmms)), "bias_copies": len(copies)},
        )
    ]


@rule(
    "metadata-only-ops",
    "dispatch-chain",
    "view/transpose/reshape ops: CPU cost only, zero device time",
    min_share=0.05,
)
def metadata_only_ops(ctx) -> list[Finding]:
    trace = ctx.trace
    pure = metadata_only(trace)
    if not len(pure):
        return []
    rows = host_cost_by_step(trace, pure)
    if not rows:
        return []
    share = sum(r.us for r in rows) / sum(r.step.host_busy_us for r in rows)
    per_step_us = sum(r.us for r in rows) / len(rows)
    per_step_n = sum(r.calls for r in rows) / len(rows)
    if share < ctx.threshold("min_share"):
        return []
    hidden = host_cost_hidden(r.step for r in rows)
    names = Counter(trace.name(i) for i in pure.tolist())
    evidence = [
        Evidence(
            "by name: " + ", ".join(f"{n} x{c}" for n, c in names.most_common(6)),
            value=float(len(pure)),
            unit="calls",
        )
    ]
    for r in rows[:6]:
        st, n, us = r.step, r.calls, r.us
        evidence.append(
            Evidence(
                f"step {st.label}: {n} metadata-only calls, {fmt_us(us, 1)} CPU "
                f"({us / st.host_busy_us:.0%} of host busy time)",
                name=f"ProfilerStep#{st.number}" if st.number is not None else None,
                ts_us=trace.rel(st.start),
                dur_us=st.dur,
                step=st.number,
                value=us,
                unit="us",
            )
        )
    return [
        Finding(
            id="metadata-only-ops",
            severity="info",
            title=(
                f"{per_step_n:.0f} metadata-only op calls per step cost {fmt_us(per_step_us, 1)} "
                f"CPU ({share:.0%} of host time)"
            ),
            explanation=(
                "aten::t, transpose, view, reshape, as_strided, expand and friends only rewrite a "
                "tensor's sizes and strides: no kernel runs and no device time is spent, but each "
                "call still goes through the dispatcher on the CPU."
            ),
            suggestion=(
                "They add up when ops are small: "
                + (
                    "the run compiles, so these run outside its compiled regions (a graph "
                    "break or code it does not trace)"
                    if compiled_run(ctx)
                    else "torch.compile traces them away"
                )
                + (", CUDA graphs skip the CPU side entirely" if cuda_graphs_fit(ctx) else "")
                + "; otherwise reshape once outside the loop."
            ),
            # CPU time only costs the step when the device waits for the host
            impact_us=0.0 if hidden else per_step_us,
            evidence=evidence,
            measured={
                "calls_per_step": round(per_step_n, 2),
                "cpu_us_per_step": round(per_step_us, 3),
                "share_of_host": round(share, 4),
                "threshold_min_share": ctx.threshold("min_share"),
            },
        )
    ]
