"""Fusion rules: eager pointwise chains of one tensor (`fusion-opportunity`) and optimizer
updates run one parameter at a time (`optimizer-unfused`). Both are kernels and host calls a
fused implementation would save; they are told apart in analysis/fusion.py and
analysis/optimizer.py because the fixes differ (torch.compile vs the optimizer's
`foreach`/`fused` flags)."""

from __future__ import annotations

from collections import Counter, defaultdict

import numpy as np

from ..analysis.fusion import elementwise_chains
from ..analysis.optimizer import optimizer_steps
from ..analysis.stepmap import step_count, step_of
from ..formatting.units import count, fmt_us
from .advice import fuse_with_compile
from .base import Evidence, Finding, rule
from .impact import host_saving_per_step
from .requires import need_kernels

#: Longest repeated block `_pattern` looks for, and how many parts it prints.
_PATTERN_BLOCK, _PATTERN_PARTS = 8, 8


def _pattern(names: tuple[str, ...]) -> str:
    """`aten::add_ x2 -> aten::threshold_backward`: repeats collapsed, so an optimizer's
    `(aten::add_ -> aten::mul_ -> aten::add_) x161` reads as one line; at most
    `_PATTERN_PARTS` parts, then how many ops the chain has in all."""
    parts: list[str] = []
    i = 0
    while i < len(names):
        best_k, best_r = 1, 1
        for k in range(1, _PATTERN_BLOCK + 1):
            block, r = names[i : i + k], 1
            while names[i + r * k : i + (r + 1) * k] == block:
                r += 1
            if r > 1 and k * r > best_k * best_r:
                best_k, best_r = k, r
        block = names[i : i + best_k]
        text = " -> ".join(block)
        parts.append(
            text if best_r == 1 else f"({text}) x{best_r}" if best_k > 1 else f"{text} x{best_r}"
        )
        i += best_k * best_r
    if len(parts) > _PATTERN_PARTS:
        parts = parts[: _PATTERN_PARTS - 1] + [f"... ({len(names)} ops in all)"]
    return " -> ".join(parts)


@rule(
    "fusion-opportunity",
    "torch-compile",
    "consecutive eager elementwise kernels that round-trip through device memory",
    min_saving_us=10.0,
)
def fusion_opportunity(ctx) -> list[Finding]:
    trace = ctx.trace
    need_kernels(trace)
    runs = elementwise_chains(trace)
    if not runs:
        return []
    patterns: dict[tuple, list] = defaultdict(list)
    for run in runs:
        patterns[tuple(trace.name(int(trace.op_of[k])) for k in run)].append(run)
    saving_total = 0.0
    rows = []
    for pattern, members in patterns.items():
        device = sum(float(trace.dur[run].sum()) for run in members)
        saving = sum(float(trace.dur[run].sum() - trace.dur[run].max()) for run in members)
        saving_total += saving
        rows.append((saving, pattern, members, device))
    per_step = saving_total / step_count(trace)
    if per_step < ctx.threshold("min_saving_us"):
        return []
    rows.sort(key=lambda r: -r[0])
    evidence = []
    for saving, pattern, members, device in rows[:5]:
        first = members[0][0]
        evidence.append(
            Evidence(
                f"{_pattern(pattern)}: {count(len(members), 'time')}, {fmt_us(device, 1)} of "
                "device time "
                f"in {sum(len(r) for r in members)} kernels (fused: ~{fmt_us(saving, 1)} less)",
                name=trace.name(first),
                ts_us=trace.rel(trace.ts[first]),
                dur_us=float(trace.dur[members[0]].sum()),
                step=step_of(trace, trace.ts[trace.launch_of[first]])
                if trace.launch_of[first] >= 0
                else None,
                value=saving,
                unit="us",
            )
        )
    return [
        Finding(
            id="fusion-opportunity",
            severity="warn",
            title=(
                f"{count(sum(len(r[2]) for r in rows), 'chain')} of eager elementwise kernels "
                f"could be fused (~{fmt_us(per_step, 0)} per step)"
            ),
            explanation=(
                "These elementwise kernels run back to back, each launched by its own op: the "
                "first writes its whole result to device memory and the next reads it back. A "
                "fused kernel (what torch.compile generates, e.g. triton_poi_fused_gelu_mul) keeps "
                "the intermediate in registers and makes one pass over memory instead of several."
                + (
                    " Each op's result shape is an input shape of the next (recorded shapes)."
                    if trace.input_dims
                    else " Shapes were not recorded, so the data flow is inferred from the order "
                    "of the kernels (profile with record_shapes=True to check it)."
                )
                + " Parameter updates (optimizer steps, AccumulateGrad, _foreach_ ops) are "
                "never counted: they touch different tensors."
            ),
            suggestion=(
                "Fuse each chain into one kernel: "
                + fuse_with_compile(ctx, "torch.compile the module")
                + " (or write the fused op); the estimate assumes the fused kernel costs about "
                "as much as the longest kernel of each chain."
            ),
            impact_us=per_step,
            evidence=evidence,
            measured={
                "chains": sum(len(r[2]) for r in rows),
                "saving_us_per_step": round(per_step, 3),
                "threshold_min_saving_us": ctx.threshold("min_saving_us"),
            },
        )
    ]


#: optimizers of torch.optim with a `fused=True` implementation; every built-in one has foreach
_FUSED = frozenset({"Adam", "AdamW", "SGD", "Adagrad"})
_FOREACH = frozenset(
    {
        "Adadelta",
        "Adagrad",
        "Adam",
        "Adamax",
        "AdamW",
        "ASGD",
        "NAdam",
        "RAdam",
        "RMSprop",
        "Rprop",
        "SGD",
    }
)


def _launched_under(trace, ops: np.ndarray) -> np.ndarray:
    """Launch calls made inside host ops `ops` (on their threads)."""
    launches = trace.launches
    if not len(launches) or not len(ops):
        return np.zeros(0, dtype=np.int64)
    hit = np.zeros(len(launches), dtype=bool)
    for lane in np.unique(trace.lane[ops]).tolist():
        mine = ops[trace.lane[ops] == lane]
        starts, ends = np.sort(trace.ts[mine]), np.sort(trace.end[mine])
        ts = trace.ts[launches]
        open_ops = np.searchsorted(starts, ts, side="right") - np.searchsorted(ends, ts, "left")
        hit |= (trace.lane[launches] == lane) & (open_ops > 0)
    return launches[hit]


@rule(
    "optimizer-unfused",
    "training",
    "optimizer.step() updates the parameters one at a time (foreach/fused not used)",
    min_ops=16,
)
def optimizer_unfused(ctx) -> list[Finding]:
    trace = ctx.trace
    calls = [
        c
        for c in optimizer_steps(trace)
        if c.optimizer in _FOREACH and not len(c.batched) and len(c.per_parameter)
    ]
    need = int(ctx.threshold("min_ops"))
    calls = [c for c in calls if len(c.per_parameter) >= need]
    if not calls:
        return []
    ops = np.concatenate([c.per_parameter for c in calls])
    host = float(trace.dur[ops].sum())
    kinds = Counter(trace.name(i) for i in ops.tolist())
    per_call = float(np.median([len(c.per_parameter) for c in calls]))
    # batched, each kind of operation becomes about one call per optimizer step
    saved = sum(
        c.host_us(trace)
        * (1 - len({trace.name(i) for i in c.per_parameter.tolist()}) / len(c.per_parameter))
        for c in calls
    )
    steps = step_count(trace)
    evidence = [
        Evidence(
            f"{count(len(calls), 'optimizer.step() call')} of {calls[0].optimizer}: median "
            f"{per_call:.0f} per-parameter ops each (threshold {need}), "
            f"{fmt_us(host / steps, 1)} of host time per step; no _foreach_/_fused_ op",
            name=trace.name(calls[0].index),
            ts_us=trace.rel(trace.ts[calls[0].index]),
            dur_us=float(trace.dur[calls[0].index]),
            step=step_of(trace, trace.ts[calls[0].index]),
            value=per_call,
            unit="ops",
        ),
        Evidence(
            "ops: " + ", ".join(f"{n} x{k}" for n, k in kinds.most_common(6)),
            value=float(len(ops)),
            unit="ops",
        ),
    ]
    measured = {
        "optimizer_calls": len(calls),
        "per_parameter_ops": len(ops),
        "host_us_per_step": round(host / steps, 3),
        "threshold_min_ops": need,
    }
    if trace.has_device:
        launches = _launched_under(trace, ops)
        device = trace.launch_of
        work = np.flatnonzero(np.isin(device, launches) & trace.device_work)
        device_us = float(trace.dur[work].sum())
        evidence.append(
            Evidence(
                f"{len(launches) / steps:.0f} launch calls and {fmt_us(device_us / steps, 1)} of "
                "device time per step",
                value=float(len(launches)) / steps,
                unit="launches",
            )
        )
        measured["launches_per_step"] = round(len(launches) / steps, 1)
        measured["device_us_per_step"] = round(device_us / steps, 3)
    name = calls[0].optimizer
    flags = "foreach=True or fused=True" if name in _FUSED else "foreach=True"
    return [
        Finding(
            id="optimizer-unfused",
            severity="warn",
            title=(
                f"optimizer.step() runs {per_call:.0f} per-parameter ops per call "
                f"({fmt_us(host / steps, 0)} host time per step): use {flags}"
            ),
            explanation=(
                f"{name} was built without foreach/fused, so each step loops over the "
                "parameters in Python and issues each arithmetic operation once per parameter "
                "(a dispatch and, on a GPU, a kernel launch each). foreach=True issues each "
                "operation once for all parameters; fused=True runs the whole update in one op. "
                "These updates touch different tensors, so they are not a fusion chain."
            ),
            suggestion=(
                f"Construct the optimizer with {flags} (torch.optim.{name}(params, ..., "
                f"{flags.split(' or ')[-1]})); foreach/fused need dense gradients."
            ),
            impact_us=host_saving_per_step(ctx, saved),
            evidence=evidence,
            measured=measured,
        )
    ]
