"""What differs between two runs' environments, said before any timing.

A timing difference means little until the reader knows what else changed:
another GPU model or vendor makes every kernel different work; another
CUDA/HIP runtime or driver changes which kernels the libraries pick; profiler
settings change the host cost of every op (`record_shapes` and `with_stack`
add work to each op the profiler records, `profile_memory` adds an event per
allocation); a different number of profiled steps changes how much the
medians can be trusted; kinetoscope's own metadata (warm-up, compile, sizes)
names the change the user made on purpose. The job's world size (from the
trace's `distributedInfo`) says how many ranks shared the work: the same
program on 8 ranks and on 2 does a different share of it per rank and talks
over different collectives. The GPU architecture comes from the device
properties (compute capability), never from kernel names: a library kernel
named `volta_sgemm...` was built for Volta and runs on Turing or Ampere too.

Profiler settings are read from what the trace holds, because Kineto does not
write the flags themselves: recorded input shapes mean `record_shapes`,
`python_function` events mean `with_stack`, `[memory]` events mean
`profile_memory`, FLOP counts mean `with_flops`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ..trace import Cat, Trace

#: Version fields of the trace's top level, in reading order, with their words.
VERSION_FIELDS = (
    ("cuda_runtime_version", "CUDA runtime"),
    ("cuda_driver_version", "CUDA driver"),
    ("cupti_version", "CUPTI"),
    ("hip_runtime_version", "HIP runtime"),
    ("hip_driver_version", "HIP driver"),
    ("roctracer_version", "roctracer"),
)

#: NVIDIA architectures by compute capability major (and 8.9 / 7.5 by minor too).
ARCHITECTURES = {
    "3": "Kepler",
    "5": "Maxwell",
    "6": "Pascal",
    "7": "Volta",
    "7.5": "Turing",
    "8": "Ampere",
    "8.9": "Ada",
    "9": "Hopper",
    "10": "Blackwell",
    "12": "Blackwell",
}
#: kinetoscope metadata keys whose recorded None means "off" (not compiled).
_OFF_WHEN_NONE = frozenset({"compile", "compile_mode"})

#: kinetoscope metadata keys left out of the comparison.
_SKIPPED_META = frozenset({"written_at", "record_shapes", "profile_memory", "with_stack"})


@dataclass(frozen=True)
class EnvRow:
    """One environment field that differs: its name and each run's value ("-" if absent)."""

    field: str
    a: str
    b: str


@dataclass
class Environment:
    #: "vendor" (NVIDIA vs AMD), "model" (H100 vs A100), "count" (1 vs 8 GPUs) or ""
    device_change: str = ""
    devices_a: str = ""
    devices_b: str = ""
    differences: list[EnvRow] = field(default_factory=list)


def devices_text(names: list[str]) -> str:
    """`4x Tesla V100-DGXS-32GB`, `NVIDIA H100 80GB HBM3`, or `none recorded`."""
    counts: dict[str, int] = {}
    for n in names:
        counts[n] = counts.get(n, 0) + 1
    return ", ".join(n if c == 1 else f"{c}x {n}" for n, c in counts.items()) or "none recorded"


def _devices(trace: Trace, vendors: list[str]) -> str:
    """The devices, or the vendor the launch calls name when no device was recorded."""
    if not trace.devices and vendors:
        return f"{'/'.join(vendors)} GPU (model not recorded)"
    return devices_text([d.name for d in trace.devices])


def architecture(cc: str | None, vendor: str | None = "NVIDIA") -> str | None:
    """`7.0` -> `Volta (compute capability 7.0)`; on AMD the runtime's major.minor is the
    gfx family (`9.4` on an MI300X is gfx94x), not an NVIDIA compute capability."""
    if not cc:
        return None
    if vendor == "AMD":
        return f"AMD gfx{cc.replace('.', '')}x"
    name = ARCHITECTURES.get(cc) or ARCHITECTURES.get(cc.split(".")[0])
    return f"{name} (compute capability {cc})" if name else f"compute capability {cc}"


def _architectures(trace: Trace) -> str | None:
    found = dict.fromkeys(architecture(d.compute_capability, d.vendor) for d in trace.devices)
    return ", ".join(a for a in found if a) or None


def world_size(trace: Trace) -> int | None:
    """Ranks in the job, from distributedInfo: `world_size`, else the default group's size."""
    info = trace.meta.distributed or {}
    size = info.get("world_size")
    if isinstance(size, int) and size > 0:
        return size
    groups = info.get("pg_config")
    if isinstance(groups, list) and groups and isinstance(groups[0], dict):
        size = groups[0].get("pg_size")
        if isinstance(size, int) and size > 0:
            return size
    return None


def _ranks(n: int | None) -> str:
    """`8 ranks`; `not recorded` without distributedInfo (a job that never initialised
    torch.distributed writes none)."""
    return "not recorded" if n is None else f"{n} rank" + ("s" if n != 1 else "")


def profiler_settings(trace: Trace) -> dict[str, bool]:
    """The profiler flags the trace's content proves were on."""
    return {
        "record_shapes": bool(trace.input_dims),
        "with_stack": bool(trace.mask(Cat.PYTHON).any()),
        "profile_memory": bool(len(trace.memory.ts)),
        "with_flops": bool(trace.flops),
    }


def _versions(trace: Trace) -> dict[str, str]:
    raw = trace.meta.versions
    return {words: str(raw[key]) for key, words in VERSION_FIELDS if raw.get(key) is not None}


def _kinetoscope(trace: Trace) -> dict[str, str]:
    """kinetoscope's run metadata, flattened (`schedule.warmup`), without what always
    differs (the write time) or what `profiler_settings` already reads from the events."""
    out: dict[str, str] = {}

    def walk(prefix: str, value: Any) -> None:
        if prefix in _SKIPPED_META:
            return
        if isinstance(value, dict):
            for k, v in value.items():
                walk(f"{prefix}.{k}" if prefix else str(k), v)
        elif value is None:  # recorded as null: off for compile, else not set
            out[prefix] = "off" if prefix.rsplit(".", 1)[-1] in _OFF_WHEN_NONE else "none"
        else:
            out[prefix] = str(value)

    walk("", trace.meta.kinetoscope or {})
    return out


def device_change(a: Trace, b: Trace, vendors_a: list[str], vendors_b: list[str]) -> str:
    """How the device changed: vendor, then model, then count ("" when it did not)."""
    if vendors_a and vendors_b and not set(vendors_a) & set(vendors_b):
        return "vendor"
    models_a, models_b = {d.name for d in a.devices}, {d.name for d in b.devices}
    if models_a and models_b and models_a != models_b:
        return "model"
    if models_a and models_b and len(a.devices) != len(b.devices):
        return "count"
    return ""


def environment_diff(
    a: Trace, b: Trace, vendors_a: list[str], vendors_b: list[str], steps: tuple[int, int]
) -> Environment:
    """The fields that differ, device first."""
    env = Environment(
        device_change=device_change(a, b, vendors_a, vendors_b),
        devices_a=_devices(a, vendors_a),
        devices_b=_devices(b, vendors_b),
    )
    rows = env.differences
    if env.devices_a != env.devices_b:
        rows.append(EnvRow("devices", env.devices_a, env.devices_b))
    if vendors_a != vendors_b:
        rows.append(EnvRow("vendor", "/".join(vendors_a) or "-", "/".join(vendors_b) or "-"))
    for name, va, vb in (
        ("GPU architecture", _architectures(a), _architectures(b)),
        ("world size", _ranks(world_size(a)), _ranks(world_size(b))),
    ):
        if va != vb:
            rows.append(EnvRow(name, _show(va), _show(vb)))
    for kind, (xa, xb) in (
        ("", (_versions(a), _versions(b))),
        ("profiler ", (profiler_settings(a), profiler_settings(b))),
        ("kinetoscope ", (_kinetoscope(a), _kinetoscope(b))),
    ):
        for key in list(dict.fromkeys([*xa, *xb])):
            va, vb = xa.get(key), xb.get(key)
            if va != vb:
                rows.append(EnvRow(kind + key, _show(va), _show(vb)))
    if steps[0] != steps[1]:
        rows.append(EnvRow("profiled steps", str(steps[0]), str(steps[1])))
    return env


def _show(value: Any) -> str:
    if value is None:
        return "-"
    if isinstance(value, bool):
        return "on" if value else "off"
    return str(value)
