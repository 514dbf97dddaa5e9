"""The corpus traces (tests/data/traces) in families, by what sets them apart for the
analyzer, and one representative of each family.

A test that repeats one property over the whole corpus spends most of its time on
traces that show the analyzer nothing new: 8 ranks of one DLRM job, the same ResNet with
and without DataLoader workers, two serving runs of one model on two vendors. By default
such a test runs on each family's representative (the smallest trace that still carries
its family's features); the other traces' cases carry the `corpus` marker, deselected by
`addopts`, so `pytest -m corpus` runs them all (every corpus trace, not only one per
family). tests/test_corpus_families.py fails on a trace that is in no family, in two, or
a family without its representative, so a trace added to the corpus needs a decision
here.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

import pytest

from .conftest import CORPUS


@dataclass(frozen=True)
class Family:
    """Traces that show the analyzer the same shape; `representative` runs by default."""

    name: str
    why: str  # what the family's traces share, and its representative carries
    representative: str  # path relative to the corpus folder
    members: tuple[str, ...]  # the other traces, same form


DLRM = "multirank/dlrm_8ranks/worker{}_step_12.{}.pt.trace.json.gz"

FAMILIES = (
    Family(
        "cpu-only",
        "host events only, no device lane, string pid/tid, timestamps in ms",
        "cpu/cpu_only_rank34.pt.trace.json.gz",
        (),
    ),
    Family(
        "tiny",
        "hand-sized unit-test traces (tens of events, no deviceProperties); the one "
        "plain (not gzipped) JSON file, backward on its own thread",
        "gpu/backward_thread.json",
        ("gpu/compare_base.json.gz", "gpu/compare_test.json.gz"),
    ),
    Family(
        "syncs",
        "A100 runs around host syncs: cuda_sync events, event/stream waits across "
        "streams, copies and memsets, no ProfilerStep (the window is the step)",
        "gpu/cuda_event_sync_multi_stream.json.gz",
        (
            "gpu/cuda_event_sync.json.gz",
            "gpu/simple_add_a100.json.gz",
            "gpu/alexnet_train.json.gz",
        ),
    ),
    Family(
        "training",
        "NVIDIA eager training in today's schema: ProfilerStep#N, record_function "
        "regions, with_stack python_function events, [memory] events",
        "gpu/tiny_transformer_block_h100.pt.trace.json.gz",
        (
            "gpu/ncompass_train_with_stack_h100nvl.pt.trace.json.gz",
            "gpu/param_linear_train_2080ti.json.gz",
            "gpu/param_resnet_dataloader_2080ti.json.gz",
        ),
    ),
    Family(
        "legacy-schema",
        "2021 Kineto categories (Operator, Runtime, Kernel, Memcpy), string tid "
        "'stream 7', async memory events, DataLoader steps",
        "gpu/resnet50_dataloader_workers4.pt.trace.json.gz",
        ("gpu/resnet50_dataloader_workers0.pt.trace.json.gz",),
    ),
    Family(
        "ns-timestamps",
        "nanosecond timestamps (displayTimeUnit ns), NCCL, fwdbwd flows",
        "gpu/resnet_train_ns.pt.trace.json.gz",
        (),
    ),
    Family(
        "multirank",
        "one rank of a distributed job: NCCL collectives, distributedInfo",
        DLRM.format(5, 1694128201549),
        (
            *(
                DLRM.format(rank, stamp)
                for rank, stamp in (
                    (0, 1694128201545),
                    (1, 1694128201556),
                    (2, 1694128201554),
                    (3, 1694128201557),
                    (4, 1694128201547),
                    (6, 1694128201553),
                    (7, 1694128201553),
                )
            ),
            "gpu/sampled_rank0.json.gz",
            "gpu/sampled_rank1.json.gz",
        ),
    ),
    Family(
        "llm",
        "Hugging Face model inference (TraceLens): profile_memory, python stacks, "
        "cuda_driver calls, one step",
        "gpu/tracelens_h100__gaunernst_bert-small-uncased__1016001.json.gz",
        (
            "gpu/tracelens_h100__Qwen_Qwen1.5-0.5B-Chat__1016005.json.gz",
            "gpu/tracelens_mi300__Qwen_Qwen1.5-0.5B-Chat__1016005.json.gz",
        ),
    ),
    Family(
        "moe",
        "mixture-of-experts models: routing kernels, profile_memory, python stacks",
        "gpu/switch_transformer_moe_a100.json.gz",
        ("gpu/tracelens_b200__eager_trace.json.gz",),
    ),
    Family(
        "graph-replay",
        "serving decode by graph replay (hipGraphLaunch / CUDA graphs): device work "
        "with few host ops",
        "gpu/tracelens_sglang_decode__sglang_Qwen3-8B_decode.json.gz",
        ("gpu/tracelens_vllm_prefilldecode_piecewise__graph_execution.json.gz",),
    ),
    Family(
        "compiled",
        "torch.compile: Torch-Compiled Region, TorchDynamo cache lookup, Triton kernels",
        "gpu/triton_example.json.gz",
        (
            "gpu/tracelens_torch_compile_triton__trace.json.gz",
            "gpu/tracelens_xdit_flux.1_aiter_sage__profile_trace_rank_0.json.gz",
        ),
    ),
    Family(
        "rocm",
        "AMD eager training on ROCm: hip runtime names, ProfilerStep#N",
        "gpu/amd_mi250_minitoy_train.json.gz",
        ("gpu/tracelens_mi300__resnet_act_checkpoint.json.gz",),
    ),
    Family(
        "device-only",
        "device events and runtime calls only, no host ops (edge case)",
        "gpu/tracelens_mi210__gpu_only_trace.json.gz",
        (),
    ),
    Family(
        "cupti-counters",
        "CUPTI profiler-range run: cuda_profiler_range events, no kernels (edge case)",
        "gpu/cupti_counters.json.gz",
        (),
    ),
)

#: The trace each family runs by default (relative to the corpus folder)
REPRESENTATIVES = frozenset(f.representative for f in FAMILIES)


def relative(trace: Path | str) -> str:
    """A corpus trace's path relative to the corpus folder, '/'-separated."""
    path = Path(trace)
    return (path.relative_to(CORPUS) if path.is_absolute() else path).as_posix()


def by_family(traces: Iterable[Path | str]) -> list:
    """`traces` (paths, or paths relative to the corpus folder) as pytest parameters: a
    family's representative as it is, every other trace marked `corpus` (run by
    `pytest -m corpus`). The test's `ids=` still names each case."""
    return [
        pytest.param(trace, marks=() if relative(trace) in REPRESENTATIVES else pytest.mark.corpus)
        for trace in traces
    ]


def membership_problems(traces: Iterable[Path | str]) -> list[str]:
    """What is wrong between the corpus's `traces` and FAMILIES, one line each: a trace in
    no family or in two, a listed trace that is not in the corpus, a family twice."""
    listed: dict[str, list[str]] = {}
    for family in FAMILIES:
        for trace in (family.representative, *family.members):
            listed.setdefault(trace, []).append(family.name)
    present = {relative(t) for t in traces}
    problems = [
        f"{trace} is in no family: add it to a family in tests/corpus_families.py "
        "(its members, or a new family if the analyzer sees something new in it)"
        for trace in sorted(present - listed.keys())
    ]
    problems += [
        f"{trace} is in {len(names)} families ({', '.join(names)}): keep it in one"
        for trace, names in sorted(listed.items())
        if len(names) > 1
    ]
    problems += [
        f"{trace} is listed in tests/corpus_families.py but not in the corpus"
        for trace in sorted(listed.keys() - present)
    ]
    names = [f.name for f in FAMILIES]
    problems += [
        f"family {n} is defined twice" for n in sorted({n for n in names if names.count(n) > 1})
    ]
    return problems
