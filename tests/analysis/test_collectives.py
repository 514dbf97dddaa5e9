"""Collectives by family and kind (analysis.collectives, analysis.collective_names).

Kernel names are the libraries' own (searched in their sources):
- DeepEP csrc/kernels/intranode.cu, internode.cu, internode_ll.cu: `deep_ep::intranode::
  dispatch`, `deep_ep::internode::combine`, `deep_ep::internode_ll::dispatch`, the notify
  kernels `notify_dispatch`, `cached_notify_dispatch`, `cached_notify_combine` and
  internode `cached_notify`; `deep_ep::layout::get_dispatch_layout` counts locally.
- vLLM csrc/custom_all_reduce.cuh: `vllm::cross_device_reduce_1stage`, `_2stage`.
- TensorRT-LLM cpp/tensorrt_llm/kernels/customAllReduceKernels.cu:
  `tensorrt_llm::kernels::oneShotAllReduceKernel`, `twoShotAllReduceKernel`; the
  namespace also holds quantization kernels (`quantize_with_block_size`, in the B200
  corpus trace) that are no collective.
- SGLang sgl-kernel trt_reduce_internal.cuh: TensorRT-LLM's kernels in namespace `trt_llm`.
- PyTorch torch/csrc/distributed/c10d/symm_mem/CUDASymmetricMemoryOps.cu:
  `multimem_all_reduce_kernel` (in the B200 corpus trace), `one_shot_all_reduce_kernel`.
"""

from __future__ import annotations

import gzip
import json
import subprocess
import sys

import pytest

from kinetoscope.analysis.collective_names import collective_family, collective_kind
from kinetoscope.analysis.collectives import collectives
from kinetoscope.analysis.kernel_names import decode, decoded
from kinetoscope.analysis.kernel_types import kernel_type, kernel_type_in
from kinetoscope.pipeline.sections import communication_section
from kinetoscope.trace import load
from tests.conftest import corpus, kernel, launch, op, recorded_once, write_trace

MI300 = "gpu/tracelens_mi300__resnet_act_checkpoint.json.gz"
B200 = "gpu/tracelens_b200__eager_trace.json.gz"


def _events(relative: str) -> list[dict]:
    with gzip.open(corpus(relative)) as f:
        return json.load(f)["traceEvents"]


@pytest.mark.parametrize(
    ("name", "family", "kind"),
    [
        ("void deep_ep::intranode::dispatch<8, 768, 6144>(int4*, float*)", "DeepEP", "dispatch"),
        ("void deep_ep::internode::combine<false, 2>(int4*, float*)", "DeepEP", "combine"),
        ("void deep_ep::internode_ll::dispatch<false, true, 7168>(void*)", "DeepEP", "dispatch"),
        ("void deep_ep::intranode::notify_dispatch<8>(int const*, int*)", "DeepEP", "notify"),
        ("cached_notify", "DeepEP", "notify"),  # the bare name seen filed as elementwise
        ("cached_notify_combine", "DeepEP", "notify"),
        (
            "void vllm::cross_device_reduce_1stage<__nv_bfloat16, 4>(vllm::RankData*, "
            "vllm::RankSignals, vllm::Signal*, __nv_bfloat16*, int, int)",
            "vLLM custom all-reduce",
            "all_reduce",
        ),
        (
            "void tensorrt_llm::kernels::oneShotAllReduceKernel<__nv_bfloat16, 8>"
            "(tensorrt_llm::kernels::AllReduceParams)",
            "TensorRT-LLM all-reduce",
            "all_reduce",
        ),
        ("void trt_llm::twoShotAllReduceKernel<half, 8>(int)", "SGLang custom all-reduce", None),
        ("void mscclpp::allreduce7<__half>(__half*)", "MSCCL++", "all_reduce"),
        ("nvshmemi_proxy_kernel", "NVSHMEM", None),
        ("ncclDevKernel_AllGather_RING_LL(ncclDevKernelArgsStorage<4096ul>)", "NCCL", None),
    ],
)
def test_collective_kernels_are_named_by_family_and_counted_as_communication(name, family, kind):
    k = decode(name)
    assert k.library == family
    assert k.kind == "collective"  # the kernel-name finding says collective, not reduction
    assert kernel_type(name) == "communication"
    if kind is not None:
        assert collective_kind(name) == kind


@pytest.mark.parametrize(
    "name",
    [
        "void deep_ep::layout::get_dispatch_layout<256, 32, 8>(long const*, int*)",
        "void tensorrt_llm::kernels::quantize_with_block_size<(tensorrt_llm::"
        "BlockScaleQuantizationType)0, __nv_bfloat16, 16>(int, int)",
        "void at::native::reduce_kernel<512, 1>(at::native::ReduceOp<float>)",
    ],
)
def test_non_collectives_stay_outside_every_family(name):
    assert collective_family(name) is None
    assert decode(name).kind != "collective"
    assert kernel_type(name) != "communication"


def test_rccl_on_rocm_nccl_on_cuda_corpus():
    """The same `ncclDevKernel_Generic` is RCCL on the MI300X trace (device vendor AMD)."""
    rocm = load(corpus(MI300))
    name = next(n for n in rocm.names if n.startswith("ncclDevKernel_Generic"))
    assert decoded(rocm, name).library == "RCCL"
    section = communication_section(rocm)
    assert {f["family"] for f in section["families"]} == {"RCCL"}
    cuda = load(corpus("multirank/dlrm_8ranks/worker0_step_12.1694128201545.pt.trace.json.gz"))
    families = {f["family"] for f in communication_section(cuda)["families"]}
    assert families == {"NCCL"}


def test_rccl_all_reduce_bytes_and_bus_bandwidth_from_record_param_comms():
    """Expectations read from the file: each all-reduce's `record_param_comms` says BFloat16,
    In msg nelems and Group size 8; the kernel it launched is its duration."""
    events = _events(MI300)
    recorded = [
        e["args"]
        for e in events
        if e.get("name") == "record_param_comms"
        and e["args"].get("Collective name") == "allreduce"
        and e.get("cat") == "cpu_op"
    ]
    assert {a["Group size"] for a in recorded} == {8}
    row = next(r for r in collectives(load(corpus(MI300))).rows if r.kind == "all_reduce")
    assert row.family == "RCCL"
    assert row.calls == 6
    assert row.ranks == [8]
    assert len(recorded) == 6
    assert row.bytes == sum(a["In msg nelems"] for a in recorded) * 2  # bf16
    assert row.busbw_gbps == pytest.approx(row.algbw_gbps * 2 * 7 / 8)
    assert row.algbw_gbps == pytest.approx(row.bytes / row.bytes_us / 1e3)


def test_b200_symmetric_memory_all_reduce_counted_with_its_calls():
    events = _events(B200)
    expected = sum(
        1
        for e in events
        if e.get("cat") == "kernel" and "multimem_all_reduce_kernel" in e.get("name", "")
    )
    trace = load(corpus(B200))
    rows = [r for r in collectives(trace).rows if r.family == "PyTorch symmetric memory"]
    assert [r.kind for r in rows] == ["all_reduce"]
    assert rows[0].calls == expected == 73
    # bytes from the launching op's recorded input (symm_mem::multimem_all_reduce_), no group
    # size recorded: algorithm bandwidth only
    assert rows[0].calls_with_bytes == expected
    assert rows[0].busbw_gbps is None
    quantize = next(n for n in trace.names if "quantize_with_block_size" in n)
    assert kernel_type_in(trace, quantize) != "communication"


def test_single_gpu_trace_has_no_communication_section():
    assert communication_section(load(corpus("gpu/alexnet_train.json.gz"))) == {}


def test_single_rank_nccl_records_without_kernels_make_no_collective():
    """resnet_train_ns records record_param_comms (Group size 1) but no collective kernel
    ran: nothing is invented."""
    assert communication_section(load(corpus("gpu/resnet_train_ns.pt.trace.json.gz"))) == {}


def _custom_ar_trace(tmp_path):
    """A vLLM custom all-reduce launched under record_param_comms: 1,048,576 bf16 elements
    over 4 ranks, twice (100 and 300 us); a DeepEP notify kernel; a TRT-LLM one-shot."""
    comm = {
        "Collective name": "allreduce",
        "In msg nelems": 1048576,
        "Out msg nelems": 1048576,
        "Group size": 4,
        "dtype": "BFloat16",
        "Process Group Name": "0",
    }
    ar = "void vllm::cross_device_reduce_1stage<__nv_bfloat16, 4>(vllm::RankData*, int)"
    events = [
        op("ProfilerStep#1", 0, 500, cat="user_annotation"),
        op("record_param_comms", 10, 20, **comm),
        launch(12, 5, correlation=1),
        kernel(ar, 40, 100, correlation=1),
        op("record_param_comms", 200, 20, **comm),
        launch(202, 5, correlation=2),
        kernel(ar, 210, 300, correlation=2),
        launch(230, 5, correlation=3),
        kernel("cached_notify", 520, 10, correlation=3),
        launch(240, 5, correlation=4),
        kernel(
            "void tensorrt_llm::kernels::oneShotAllReduceKernel<float, 4>(int)",
            540,
            20,
            correlation=4,
        ),
    ]
    return write_trace(tmp_path / "ar.json", events)


def test_bandwidth_arithmetic_on_a_built_trace(tmp_path):
    c = collectives(load(_custom_ar_trace(tmp_path)))
    by = {(r.family, r.kind): r for r in c.rows}
    ar = by[("vLLM custom all-reduce", "all_reduce")]
    assert ar.calls == 2 and ar.total_us == 400
    assert ar.bytes == 2 * 1048576 * 2  # two calls of 2 MiB
    # 4,194,304 B in 400 us = 10.48576 GB/s; bus: x 2(4-1)/4 = 1.5
    assert ar.algbw_gbps == pytest.approx(10.48576)
    assert ar.busbw_gbps == pytest.approx(15.72864)
    assert ar.skew == pytest.approx(300 / 200)  # max over median (median of 100, 300)
    assert ("DeepEP", "notify") in by
    assert by[("TensorRT-LLM all-reduce", "all_reduce")].calls_with_bytes == 0


GLOO_SCRIPT = """
import os, sys, torch, torch.distributed as dist
from torch.profiler import profile, ProfilerActivity
dist.init_process_group("gloo", init_method="file://" + sys.argv[2], rank=0, world_size=1)
x = torch.ones(4096)
with profile(activities=[ProfilerActivity.CPU], record_shapes=True) as p:
    for _ in range(3):
        dist.all_reduce(x)
        dist.broadcast(x, 0)
p.export_chrome_trace(sys.argv[1] + ".part")
os.replace(sys.argv[1] + ".part", sys.argv[1])
os._exit(0)  # no teardown of the group or of torch: the trace is all this run is for
"""


@pytest.fixture(scope="module")
def gloo_trace(tmp_path_factory):
    """The Gloo recording. Its child died once by SIGABRT in a full run (run 112, no
    output kept) and never in 25 runs alone: a crash inside torch's Gloo, before the trace
    was whole or in the teardown after it. The child now ends at once after writing the
    trace (whole, by rename), and a child that dies by a signal is run again, twice at
    most, its stderr in the failure if all three die."""

    def record(folder):
        for attempt in range(3):
            args = [str(folder / "gloo.json"), str(folder / f"store{attempt}")]  # a fresh store
            done = subprocess.run(
                [sys.executable, "-c", GLOO_SCRIPT, *args],
                timeout=120,
                capture_output=True,
                text=True,
            )
            if done.returncode >= 0:
                break
        assert done.returncode == 0 and (folder / "gloo.json").is_file(), done.stderr[-3000:]

    return recorded_once(tmp_path_factory, "gloo_collectives", record) / "gloo.json"


def test_gloo_cpu_collectives_from_a_recording(gloo_trace):
    """Three all-reduces and three broadcasts of 4,096 fp32 (16 KiB each) on a Gloo group."""
    rows = {(r.family, r.kind): r for r in collectives(load(gloo_trace)).rows}
    assert set(rows) == {("Gloo", "all_reduce"), ("Gloo", "broadcast")}
    assert rows[("Gloo", "all_reduce")].calls == 3
    assert rows[("Gloo", "all_reduce")].bytes == 3 * 4096 * 4
    assert rows[("Gloo", "all_reduce")].busbw_gbps is None  # group size not recorded
    assert rows[("Gloo", "broadcast")].busbw_gbps is not None  # factor 1 needs none


def test_communication_section_in_every_format(tmp_path):
    """The built custom all-reduce run: the family and bandwidth reach JSON, text,
    Markdown and HTML."""
    from kinetoscope.api import explain
    from kinetoscope.report.html import render_html
    from kinetoscope.report.markdown import render_markdown
    from kinetoscope.report.text import render_text

    report = explain(str(_custom_ar_trace(tmp_path)))
    data = json.loads(report.to_json())
    families = {f["family"] for f in data["communication"]["families"]}
    assert families == {"vLLM custom all-reduce", "DeepEP", "TensorRT-LLM all-reduce"}
    for text in (render_text(report), render_markdown(report), render_html(report)):
        assert "vLLM custom all-reduce" in text
        assert "15.7 GB/s" in text  # bus bandwidth, 15.72864 GB/s to 3 digits
        assert "not recorded" in text  # the TRT-LLM kernel's bytes
