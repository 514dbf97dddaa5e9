"""Which knobs a tune session tries, and why: from the baseline's diagnosis.

The verdict names what limits the program, so only the knobs acting on that
limit are worth a trial (each costs a subprocess run):

- data-bound (the step waits in DataLoader `__next__`): `num_workers` builds
  batches in other processes while the step runs, up to the cores there are;
  `pin_memory` only matters when batches are copied to a GPU (pinned buffers
  make the copy asynchronous); `prefetch_factor` (batches each worker keeps
  ready) exists only with workers, so it is tried on top of the winners;
- overhead-bound / host-only (the device, or the math, waits on per-op
  dispatch): a larger batch does more work per dispatched op; `torch.compile`
  fuses ops so fewer are dispatched, and on CUDA its `reduce-overhead` mode
  replays the step as a CUDA graph (one launch instead of one per kernel);
- compute-bound (the device is busy): cheaper math: bf16 instead of fp32, or
  TF32 tensor cores for fp32 matmuls on NVIDIA GPUs;
- mixed: both lists; sync-bound and compile-window: no knob fixes them (the
  fix is in the code, or a longer warm-up), which the session says;
- memory headroom (GPU, whatever the verdict): when the baseline's peak is far
  below the device's memory, larger batches, up to a predicted peak under the
  memory limit (peak grows about linearly with batch).

A user's `--knob name=v1,v2` is tried as given, whatever the verdict.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from ..errors import UsageError
from .knob import convert

#: knobs of built-in workloads that are not Params fields
RUN_KNOBS = {"compile": None, "dtype": "fp32", "tf32": False}
COMPILE_VALUES = ("off", "default", "reduce-overhead", "max-autotune")
DTYPE_VALUES = ("fp32", "bf16", "fp16")


@dataclass(frozen=True)
class Plan:
    """One knob to try: each value alone against its reference."""

    name: str
    values: tuple
    why: str
    on_top: bool = False  # tried on top of the combined winners, not the baseline


@dataclass(frozen=True)
class Facts:
    """What the choice reads from the baseline (its diagnosis and its run)."""

    regime: str
    shares: dict[str, float]  # data_share, sync_share, dispatch_share, other_share
    device_ratio: float  # device busy / host time
    gpu: bool
    backend: str  # cpu, cuda or rocm
    cpus: int
    peak_memory: int | None = None
    device_memory: int | None = None
    memory_limit: float = 0.9  # share of device memory a larger batch may be predicted to use


def parse_knob(text: str) -> tuple[str, list[str]]:
    """`batch_size=16,32,64` -> ("batch_size", ["16", "32", "64"])."""
    m = re.fullmatch(r"\s*([A-Za-z_][A-Za-z0-9_-]*)\s*=\s*(.+)", text)
    if not m:
        raise UsageError(f"--knob {text!r}: expected NAME=V1,V2,... (e.g. batch_size=16,32,64)")
    values = [v.strip() for v in m[2].split(",") if v.strip()]
    if not values:
        raise UsageError(f"--knob {text!r}: give at least one value")
    return m[1], values


def literal(text: str):
    """A script knob's value as written: int, float, true/false, or the text itself."""
    for kind in (int, float):
        try:
            return kind(text)
        except ValueError:
            pass
    low = text.lower()
    return low == "true" if low in ("true", "false") else text


def workload_value(name: str, text: str, base: dict):
    """A `--knob` value for a built-in workload, as the type its option has."""
    if name == "compile":
        if text not in COMPILE_VALUES:
            raise UsageError(f"--knob compile={text}: choose from {', '.join(COMPILE_VALUES)}")
        return None if text == "off" else text
    if name == "dtype":
        if text not in DTYPE_VALUES:
            raise UsageError(f"--knob dtype={text}: choose from {', '.join(DTYPE_VALUES)}")
        return text
    if name not in base:
        own = ", ".join(sorted(base))
        raise UsageError(f"--knob {name}: not a knob of this workload (its knobs: {own})")
    try:
        return convert(text, base[name], f"--knob {name}")
    except ValueError as exc:
        raise UsageError(str(exc)) from None


def _pct(x: float) -> str:
    return f"{x * 100:.0f}%"


def choose(facts: Facts, base: dict) -> tuple[list[Plan], list[tuple[str, str]]]:
    """(plans, [(knob, why not)]) for a built-in workload whose settings are `base`."""
    plans: list[Plan] = []
    skipped: list[tuple[str, str]] = []
    regime, shares = facts.regime, facts.shares
    if regime == "data-bound":
        _data_knobs(facts, base, plans, skipped)
    elif regime in ("overhead-bound", "host-only", "mixed"):
        share = shares.get("dispatch_share", 0) + shares.get("other_share", 0)
        figure = (
            f"device busy {facts.device_ratio:.0%} of host time"
            if facts.gpu
            else f"dispatch + Python {_pct(share)} of the window"
        )
        _overhead_knobs(facts, base, f"{regime} ({figure})", plans, skipped)
    if regime in ("compute-bound", "mixed"):
        figure = (
            f"device busy {facts.device_ratio:.0%} of host time"
            if facts.gpu
            else f"CPU compute {_pct(shares.get('compute_share', 0))} of the window"
        )
        _compute_knobs(facts, base, f"{regime} ({figure})", plans, skipped)
    if regime == "sync-bound":
        wait = _pct(shares.get("sync_share", 0))
        skipped.append(("(all)", f"sync-bound (sync wait {wait}): the fix is removing the "
                        "syncs in the code; no knob changes that"))  # fmt: skip
    if regime == "compile-window":
        skipped.append(("(all)", "compile-window: the profile is still compiling; "
                        "rerun with a longer --warmup"))  # fmt: skip
    _headroom(facts, base, plans, skipped)
    return plans, skipped


def _data_knobs(facts: Facts, base: dict, plans: list[Plan], skipped: list) -> None:
    why = f"data-bound (data wait {_pct(facts.shares.get('data_share', 0))} of the window)"
    if "num_workers" not in base:
        skipped.append(("num_workers", "this workload has no DataLoader"))
        return
    now = base["num_workers"]
    values = tuple(n for n in sorted({1, 2, 4, 8, facts.cpus}) if now < n <= facts.cpus)
    if values:
        plans.append(Plan("num_workers", values, f"{why}: workers build batches in parallel "
                          f"with the step (up to the {facts.cpus} cores here)"))  # fmt: skip
    else:
        skipped.append(("num_workers", f"already {now}, the {facts.cpus} cores here"))
    if not facts.gpu:
        skipped.append(("pin_memory", "no GPU: pinned buffers only speed host-to-GPU copies"))
    elif not base.get("pin_memory", True):
        plans.append(Plan("pin_memory", (True,), f"{why}: pinned batches copy to the GPU "
                          "asynchronously (non_blocking)"))  # fmt: skip
    if "prefetch_factor" in base:
        more = f"{why}: more batches in flight per worker (only with workers: on top of winners)"
        plans.append(Plan("prefetch_factor", (4,), more, on_top=True))
    skipped.append(("persistent_workers", "the workload makes one iterator for the whole run; "
                    "keeping workers across iterators (epochs) changes nothing"))  # fmt: skip


def _overhead_knobs(facts: Facts, base: dict, why: str, plans: list, skipped: list) -> None:
    if "batch" in base:
        values = tuple(base["batch"] * k for k in (2, 4))
        plans.append(Plan("batch", values, f"{why}: more work per dispatched op "
                          "(compared by samples/s)"))  # fmt: skip
    modes = ("default", "reduce-overhead") if facts.backend == "cuda" else ("default",)
    if base.get("compile") is None:
        plans.append(
            Plan(
                "compile",
                modes,
                f"{why}: torch.compile fuses ops, fewer to dispatch"
                + ("; reduce-overhead replays a CUDA graph" if len(modes) > 1 else ""),
            )
        )
    if facts.backend != "cuda":
        skipped.append(("CUDA graphs", "needs an NVIDIA GPU (compile mode reduce-overhead)"))


def _compute_knobs(facts: Facts, base: dict, why: str, plans: list, skipped: list) -> None:
    if not facts.gpu:
        skipped.append(("dtype", f"{why}, but on a CPU bf16 math is emulated on most CPUs "
                        "and rarely faster"))  # fmt: skip
        return
    if base.get("dtype") == "fp32":
        plans.append(Plan("dtype", ("bf16",), f"{why}: bf16 halves bytes moved and uses "
                          "tensor cores"))  # fmt: skip
        if facts.backend == "cuda":
            plans.append(Plan("tf32", (True,), f"{why}: TF32 tensor cores for fp32 matmuls"))
    else:
        skipped.append(("dtype", f"already {base.get('dtype')}"))


def _headroom(facts: Facts, base: dict, plans: list, skipped: list) -> None:
    if "batch" not in base or not facts.peak_memory or not facts.device_memory:
        return
    if any(p.name == "batch" for p in plans):
        return
    used, limit = facts.peak_memory / facts.device_memory, facts.memory_limit
    fits = tuple(base["batch"] * k for k in (2, 4) if used * k <= limit)
    if fits and used < 0.5:
        plans.append(Plan("batch", fits, f"memory headroom: peak {_pct(used)} of device memory; "
                          f"batches predicted to stay under {_pct(limit)}"))  # fmt: skip
