"""Training-loop health: data waits and host syncs.

Rules of the "Training-loop health" family of `docs/rules.md` plus
`host-sync` from the CPU lane table; slow steps, idle devices and the window
live in `rules.training_steps`, memory in `rules.memory`. Each reads a
measurement from `analysis/` and judges it against thresholds.
"""

from __future__ import annotations

from collections import Counter, defaultdict

import numpy as np

from ..analysis.account import sets, sources
from ..analysis.account.account import window_account
from ..analysis.compile import compile_events, during_compilation
from ..analysis.dataloader import data_waits, next_events
from ..analysis.source_lines import line_label
from ..analysis.steps import step_stats
from ..analysis.syncs import PAGEABLE_COPY_ADVICE, sync_sites
from ..formatting.units import count, fmt_pct, fmt_us
from .base import Evidence, Finding, NotChecked, event_evidence, rule

FAMILY = "Training-loop health"
#: the cause key of every finding about the loop waiting for its next batch (rules.merge)
DATA_WAIT = "data-wait"
#: the cause key of every finding about the host blocked until the device drains its queue:
#: `host-sync` (the sites) and `sync-bound` (the verdict) describe one wait
SYNC_WAIT = "sync-wait"


@rule(
    "dataloader-bound",
    FAMILY,
    "the loop waits in DataLoader.__next__ while the device idles",
    min_share=0.10,
    min_idle_share=0.5,
)
def dataloader_bound(ctx) -> list[Finding]:
    trace = ctx.trace
    waits = ctx.analysis(data_waits)
    if not waits:
        raise NotChecked(
            "no enumerate(DataLoader)#...__next__ ranges in the trace",
            "iterate a torch.utils.data.DataLoader inside the profiled loop (the profiler "
            "records its __next__ calls automatically)",
        )
    total_wait = sum(w.wait_us for w in waits)
    total_dur = sum(w.step_dur for w in waits)
    idle = sum(w.device_idle_us for w in waits)
    share = total_wait / total_dur if total_dur > 0 else 0.0
    idle_share = idle / total_wait if total_wait > 0 else 0.0
    min_share, min_idle = ctx.threshold("min_share"), ctx.threshold("min_idle_share")
    if share < min_share or idle_share < min_idle:
        return []
    evidence = []
    for w in sorted((w for w in waits if w.longest >= 0), key=lambda w: -w.wait_us)[:5]:
        i = w.longest
        evidence.append(
            event_evidence(
                trace,
                i,
                f"{w.share:.0%} of the {'step' if w.step is not None else 'window'} in "
                "DataLoader.__next__"
                + (
                    f", device idle for {fmt_us(w.device_idle_us)} of it"
                    if trace.has_device
                    else f" ({fmt_us(w.wait_us)}, no device: the loop stops while it loads)"
                ),
                step=w.step,
                value=w.share,
                unit="share",
            )
        )
    device = "the device idled" if trace.has_device else "no device work overlapped it"
    # per step; without ProfilerStep ranges, per batch fetched (one __next__ per iteration)
    per = len(waits) if trace.steps else max(sum(w.calls for w in waits), 1)
    where = "each step" if trace.steps else f"the window ({per} batches, no ProfilerStep#N)"
    # what a faster loader gives back: the wait's time in the window account (`data`:
    # inside __next__ with the device idle, one-time work and the profiler set apart)
    account = window_account(trace)
    held = account.us("data")
    held_share = held / account.window_us if account.window_us > 0 else 0.0
    return [
        Finding(
            id="dataloader-bound",
            severity="critical" if share >= 0.3 else "warn",
            title=(
                f"Data loading takes {share:.0%} of {where}; "
                + ("the device idles in it " if trace.has_device else "the loop waits in it ")
                + f"{fmt_pct(held_share)} of the window"
            ),
            explanation=(
                f"The loop spends {share:.0%} of its step time waiting for the next "
                f"batch from the DataLoader, and {device} for {idle_share:.0%} of that wait. "
                "The model is starved: batches are produced slower than they are consumed."
            ),
            suggestion=loader_advice(trace),
            impact_us=held / per,
            evidence=evidence,
            cause=(DATA_WAIT,),
            measured={
                "share": round(share, 4),
                "min_share": min_share,
                "device_idle_share_of_wait": round(idle_share, 4),
                "min_idle_share": min_idle,
                "wait_per_step_us": round(total_wait / per, 1),
                "steps": len(waits) if trace.steps else 0,
                "batches": sum(w.calls for w in waits),
            },
        )
    ]


#: the iterator PyTorch's DataLoader uses when num_workers > 0 (else _SingleProcessDataLoaderIter)
WORKER_ITER = "_MultiProcessingDataLoaderIter"


def _stall_us(trace, sites) -> float:
    """The time inside the sites' blocking calls that the window account gives the syncs
    themselves (`sync_stall`): every device stream idle, the wait's own cost. A wait on a
    busy device is the device's time, and a wait on something outside the trace is
    `external`: removing the sync saves neither."""
    calls = np.array([c for s in sites for c in s.calls], dtype=np.int64)
    held = sources.events_set(trace, calls)
    return sets.length(sets.meet(held, window_account(trace).parts["sync_stall"]))


def loader_advice(trace) -> str:
    """Advice for a starved loop that fits what the trace shows: workers only where the
    DataLoader has none, pinned memory and GPU-side preprocessing only where there is a GPU."""
    workers = any(WORKER_ITER in trace.name(i) for i in next_events(trace)[:1].tolist())
    if workers:
        head = (
            "The DataLoader already loads in worker processes (its iterator is "
            f"{WORKER_ITER}: num_workers > 0) and they still fall behind: make each sample "
            "cheaper (cache or pre-decode the data, lighter transforms), check the workers "
            "are not starved of CPU cores, and keep them alive across epochs "
            "(persistent_workers=True)"
        )
    else:
        head = (
            "Load batches in background processes (DataLoader num_workers > 0, with "
            "persistent_workers=True and a prefetch_factor), cache or pre-decode the data"
        )
    if trace.has_device:
        head += (
            "; pin_memory=True with .to(device, non_blocking=True), or move preprocessing "
            "(augmentation, decoding) onto the GPU"
        )
    if not workers:
        head += (
            ". Workers pay off when a batch costs more to build than to pass between "
            "processes, and each worker runs its own intra-op threads: on an H100 machine "
            "with 16 cores, a loader of 32-pixel images was 0.31-0.65x as fast with 1-16 "
            "workers. Measure before keeping a setting (kinetoscope tune tries each)"
        )
    return head + "."


@rule(
    "host-sync",
    FAMILY,
    "the host blocks on the device inside steps (synchronize calls, .item() on device tensors)",
    warn_share=0.02,
)
def host_sync(ctx) -> list[Finding]:
    trace = ctx.trace
    compiling = ctx.analysis(compile_events)
    # syncs the compiler and autotuner issue while compiling are compilation's cost
    sites = [
        s
        for s in ctx.analysis(sync_sites)
        if not during_compilation(trace, compiling, trace.ts[s.index], trace.end[s.index])
    ]
    if not sites:
        if not trace.has_device:
            raise NotChecked(
                "no device activity in the trace: the host cannot wait for a device",
                "profile with ProfilerActivity.CUDA (or the ROCm equivalent) on a GPU machine",
            )
        return []
    stats = ctx.analysis(step_stats)
    n_steps = len(stats)
    window = sum(s.dur for s in stats)
    waited = sum(s.wait_us for s in sites)
    stall = _stall_us(trace, sites)
    share = stall / window if window > 0 else 0.0
    warn_share = ctx.threshold("warn_share")
    groups: dict[tuple[str, str, str, str], list] = defaultdict(list)
    for s in sites:
        context = trace.name(s.context) if s.context >= 0 else "-"
        frame = line_label(trace, s.index)  # the user's line, not a built-in's frame
        groups[(trace.name(s.index), s.held_by, context, frame)].append(s)
    ranked = sorted(groups.items(), key=lambda kv: -sum(s.wait_us for s in kv[1]))
    evidence = []
    for (name, call, context, frame), members in ranked[:6]:
        first = max(members, key=lambda s: s.wait_us)
        per_step = len(members) / n_steps if n_steps else len(members)
        evidence.append(
            Evidence(
                f"{name}{f' (-> {call})' if call != name else ''} in {context}"
                f"{f' from {frame}' if frame else ''}: {count(len(members), 'sync')} "
                f"({per_step:.3g} per step), {fmt_us(sum(s.wait_us for s in members))} blocked "
                "in total",
                name=name,
                ts_us=trace.rel(trace.ts[first.index]),
                dur_us=first.wait_us,
                step=first.step,
                value=sum(s.wait_us for s in members),
                unit="us",
            )
        )
    kinds = Counter(s.kind for s in sites)
    where = "inside steps" if trace.steps else "in the window"
    per_step = len(sites) / n_steps if n_steps else float(len(sites))
    return [
        Finding(
            id="host-sync",
            severity="warn" if share >= warn_share else "info",
            title=(
                f"{count(len(sites), 'host-device sync')} {where} ({per_step:.3g} per step, "
                f"{fmt_us(waited)} blocked)"
            ),
            explanation=(
                "The host stops and waits for the device to finish queued work "
                f"({', '.join(count(n, k) for k, n in kinds.most_common())}). While it waits it "
                "cannot enqueue the next kernels, so the device drains and idles after each "
                f"sync. Of the {fmt_us(waited)} blocked, {fmt_us(stall)} ({share:.1%} of the "
                "profiled steps) passed with every device stream idle: the syncs' own cost, "
                "and all that removing them can save; the rest waited on a busy device, "
                "which is the device's time."
            ),
            suggestion=(
                "Avoid .item(), .cpu(), .tolist(), printing tensors or Python control flow on "
                "tensor values inside the loop (log every N steps, accumulate on the device); "
                "copy with .to(device, non_blocking=True) from pinned memory; drop explicit "
                "torch.cuda.synchronize() calls outside timing code." + _pageable_note(sites)
            ),
            impact_us=stall / n_steps if n_steps else stall,
            evidence=evidence,
            cause=(SYNC_WAIT,),
            measured={
                "syncs": len(sites),
                "syncs_per_step": round(per_step, 3),
                "blocked_us": round(waited, 1),
                "stall_us": round(stall, 1),
                "share_of_steps": round(share, 4),
                "warn_share": warn_share,
                "pageable_copy_us": round(sum(s.wait_us for s in sites if s.pageable_copy), 1),
            },
        )
    ]


def _pageable_note(sites) -> str:
    """The copy's own advice where a device-to-pageable copy held a wait: removing a
    synchronize does nothing there, the copy itself blocks."""
    held = [s for s in sites if s.pageable_copy]
    if not held:
        return ""
    us = sum(s.wait_us for s in held)
    return f" {count(len(held), 'wait')} ({fmt_us(us)}) held by a {PAGEABLE_COPY_ADVICE}."
