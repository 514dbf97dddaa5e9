"""Trace quality, timestamp resolution, kernel types and communication overlap.

Expectations come from reading the traces: copies the tests build break one
thing on purpose (clock skew, whole-microsecond timestamps, lost kernels).
"""

from __future__ import annotations

import gzip
import json
import math

import pytest

from kinetoscope.analysis.kernel_types import copy_type, kernel_type, kernel_types
from kinetoscope.analysis.quality import trace_quality
from kinetoscope.analysis.resolution import timestamp_resolution
from kinetoscope.analysis.streams import stream_report
from kinetoscope.rules.engine import run_rules
from kinetoscope.trace import load

from ..conftest import corpus

DEVICE_CATS = {"kernel", "gpu_memcpy", "gpu_memset", "Kernel", "Memcpy", "Memset"}
NS_TRACE = "gpu/ncompass_train_with_stack_h100nvl.pt.trace.json.gz"


def _events(relative: str) -> dict:
    with gzip.open(corpus(relative), "rt") as handle:
        return json.load(handle)


def _write(tmp_path, data: dict, name: str):
    path = tmp_path / name
    path.write_text(json.dumps(data))
    return path


def _shift_device(data: dict, us: float) -> dict:
    for ev in data["traceEvents"]:
        if ev.get("cat") in DEVICE_CATS and "ts" in ev:
            ev["ts"] = ev["ts"] + us
    return data


def _whole_us(data: dict) -> dict:
    """What an older Kineto writes: start and duration truncated to the microsecond."""
    for ev in data["traceEvents"]:
        for key in ("ts", "dur"):
            if isinstance(ev.get(key), (int, float)):
                ev[key] = math.floor(ev[key])
    return data


# ---------------------------------------------------------------- quality
def test_nanosecond_trace_is_good():
    # resnet_train_ns: ns timestamps, every linked kernel starts after its launch, no
    # launch without a kernel (checked with the counts below), no graph launches
    quality = trace_quality(load(corpus("gpu/resnet_train_ns.pt.trace.json.gz")))
    assert quality.grade == "good", quality.issues
    assert quality.resolution.coarsest_us == pytest.approx(0.001)


def test_skewed_copy_reports_clock_skew(tmp_path):
    # every device event moved 200 us earlier: kernels now start before their launch
    path = _write(tmp_path, _shift_device(_events(NS_TRACE), -200.0), "skewed.json")
    quality = trace_quality(load(path))
    skew = [i for i in quality.issues if i.id == "clock-skew"]
    assert skew and skew[0].level == "poor" and skew[0].value_us >= 190
    assert quality.grade == "poor"
    assert not [i for i in trace_quality(load(corpus(NS_TRACE))).issues if i.id == "clock-skew"]


def test_whole_microsecond_copy_lowers_trust(tmp_path):
    path = _write(tmp_path, _whole_us(_events(NS_TRACE)), "whole_us.json")
    trace = load(path)
    assert timestamp_resolution(trace).whole_us
    quality = trace_quality(trace)
    assert "timestamp-resolution" in [i.id for i in quality.issues]
    assert quality.grade == "caution"
    assert not timestamp_resolution(load(corpus(NS_TRACE))).whole_us


def test_copy_without_kernels_reports_dropped_events(tmp_path):
    data = _events(NS_TRACE)
    kernels = [e for e in data["traceEvents"] if e.get("cat") == "kernel"]
    lost = {id(e) for e in kernels[::4]}  # a quarter of the kernels lost
    data["traceEvents"] = [e for e in data["traceEvents"] if id(e) not in lost]
    quality = trace_quality(load(_write(tmp_path, data, "dropped.json")))
    dropped = [i for i in quality.issues if i.id == "dropped-events"]
    assert dropped and dropped[0].count == len(lost) and dropped[0].level == "poor"


GOOD_SMALL = "gpu/amd_mi250_minitoy_train.json.gz"  # graded good: ns timestamps, all linked


@pytest.mark.parametrize("cut", ["json", "gzip"])
def test_a_file_that_lost_events_is_never_good(tmp_path, cut):
    """The MI250 loop is graded good whole; cut off, the events after the cut are gone
    (Kineto writes its cpu_op events first and the device records last: in this file
    every kernel comes after the last op), so the recovered part is graded poor.
    Before: "recovered N complete events" and "gzip stream ends early" were graded good."""
    assert trace_quality(load(corpus(GOOD_SMALL))).grade == "good"  # must not fire whole
    raw = gzip.decompress(corpus(GOOD_SMALL).read_bytes())
    path = tmp_path / f"cut.{cut}"
    if cut == "json":
        path.write_bytes(raw[: int(len(raw) * 0.6)])
    else:
        whole = gzip.compress(raw)
        path.write_bytes(whole[: len(whole) // 2])
    trace = load(path)
    assert any("truncated" in w for w in trace.warnings)
    quality = trace_quality(trace)
    assert quality.grade == "poor"
    lost = [i for i in quality.issues if i.id == "lost-events"]
    assert len(lost) == 1 and "truncated" in lost[0].text
    found = run_rules(trace, None, ["trace-quality"]).findings
    assert [f.measured["grade"] for f in found] == ["poor"]


def test_replaced_control_characters_lose_nothing(tmp_path):
    """Control characters replaced by spaces are a repair, not a loss: still good."""
    data = _events(GOOD_SMALL)
    data["traceEvents"][0]["name"] = data["traceEvents"][0]["name"] + "\x01"
    path = tmp_path / "ctrl.json"
    path.write_text(json.dumps(data, ensure_ascii=False).replace("\\u0001", "\x01"))
    trace = load(path)
    assert any("control characters" in w for w in trace.warnings)
    quality = trace_quality(trace)
    assert quality.grade == "good", quality.reasons


def test_occupancy_blind_spot_on_cluster_launches():
    # b200: nvjet GEMMs and fmha kernels launched with cuLaunchKernelEx record 0% occupancy
    quality = trace_quality(load(corpus("gpu/tracelens_b200__eager_trace.json.gz")))
    blind = [i for i in quality.issues if i.id == "occupancy-blind-spot"]
    assert blind and blind[0].level == "note" and blind[0].count > 100
    assert not [
        i
        for i in trace_quality(load(corpus("gpu/resnet_train_ns.pt.trace.json.gz"))).issues
        if i.id == "occupancy-blind-spot"
    ]


def test_trace_quality_finding(tmp_path):
    path = _write(tmp_path, _shift_device(_events(NS_TRACE), -200.0), "skewed.json")
    found = run_rules(load(path), None, ["trace-quality"]).findings
    assert found and found[0].severity == "warn" and "clock-skew" in found[0].measured["issues"]
    clean = load(corpus("gpu/resnet_train_ns.pt.trace.json.gz"))
    assert not run_rules(clean, None, ["trace-quality"]).findings


# ---------------------------------------------------------------- resolution
def test_sub_resolution_latency_is_not_reported(tmp_path):
    # ncompass kernels start ~5.7 us (median) after their launch; moved 3.5 us earlier,
    # the median latency is ~2 us: measurable at 1 ns, not at 1 us
    data = _shift_device(_events(NS_TRACE), -3.5)
    fine = load(_write(tmp_path, data, "fine.json"))
    coarse = load(_write(tmp_path, _whole_us(data), "coarse.json"))
    config = {"launch-latency": {"p50_us": 1.0}}
    found = run_rules(fine, config, ["launch-latency"]).findings
    assert found and 1.0 < found[0].measured["p50_us"] < 4.0
    assert not run_rules(coarse, config, ["launch-latency"]).findings


# ---------------------------------------------------------------- kernel types
@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("ampere_sgemm_128x64_nn", "gemm"),
        ("nvjet_tst_64x64_64x16_2x1_2cta_v_bz_bias_TNT", "gemm"),
        ("Cijk_Alik_Bljk_HHS_BH_MT128x128x32_MI32x32x8x1", "gemm"),
        ("triton_tem_fused_mm_0", "gemm"),
        ("triton_poi_fused_add_mul_0", "elementwise"),
        ("triton_red_fused_sum_1", "reduction"),
        ("triton_per_fused_native_layer_norm_2", "reduction"),
        (
            "ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevKernelArgsStorage<4096ul>)",
            "communication",
        ),
        (
            "void pytorch_flash::flash_fwd_kernel<Flash_fwd_kernel_traits<64>>(Flash_fwd_params)",
            "attention",
        ),
        ("bn_fw_tr_1C11_kernel_NCHW", "reduction"),
        (
            "void at::native::vectorized_elementwise_kernel<4, CUDAFunctor_add<float>>()",
            "elementwise",
        ),
        ("split_embedding_codegen_forward_unweighted_kernel", "embedding"),
    ],
)
def test_kernel_type_from_naming_conventions(name, expected):
    assert kernel_type(name) == expected


def test_copy_directions():
    assert copy_type("Memcpy HtoD (Pinned -> Device)") == "memcpy HtoD"
    assert copy_type("Memcpy DtoH (Device -> Pageable)") == "memcpy DtoH"
    assert copy_type("Memcpy DtoD (Device -> Device)") == "memcpy DtoD"
    assert copy_type("Memcpy PtoP (Device -> Device)") == "memcpy PtoP"


@pytest.mark.parametrize(
    "relative",
    [
        "gpu/tracelens_xdit_flux.1_aiter_sage__profile_trace_rank_0.json.gz",
        "gpu/tracelens_mi300__resnet_act_checkpoint.json.gz",
        "gpu/tracelens_b200__eager_trace.json.gz",
        "gpu/switch_transformer_moe_a100.json.gz",
        "gpu/param_resnet_dataloader_2080ti.json.gz",
        "gpu/sampled_rank0.json.gz",
        "multirank/dlrm_8ranks/worker0_step_12.1694128201545.pt.trace.json.gz",
    ],
)
def test_other_stays_under_ten_percent(relative):
    types = kernel_types(load(corpus(relative)))
    assert types.total_us > 0
    assert types.share("other") < 0.10, types.top_other
    assert sum(r.share for r in types.rows) == pytest.approx(1.0)


# ---------------------------------------------------------------- streams
def test_exposed_communication_fires_on_data_parallel_runs():
    # mi300 resnet DDP: RCCL kernels on their own stream, most of them with no compute
    # beside them (hidden share ~23%), 11-23 ms exposed per step of 18-51 ms
    for relative in (
        "gpu/tracelens_mi300__resnet_act_checkpoint.json.gz",
        "multirank/dlrm_8ranks/worker0_step_12.1694128201545.pt.trace.json.gz",
    ):
        trace = load(corpus(relative))
        report = stream_report(trace)
        assert report.has_communication and len(report.streams) >= 2
        found = run_rules(trace, None, ["exposed-communication"]).findings
        assert found and found[0].measured["worst_exposed_share"] >= 0.15


def test_exposed_communication_silent_without_collectives():
    # resnet_train_ns has nccl:* host annotations but no communication kernel on the device
    for relative in (
        "gpu/resnet_train_ns.pt.trace.json.gz",
        "gpu/tiny_transformer_block_h100.pt.trace.json.gz",
    ):
        trace = load(corpus(relative))
        assert not stream_report(trace).has_communication
        assert not run_rules(trace, None, ["exposed-communication"]).findings


def test_multirank_reports_exposed_communication_per_rank():
    from kinetoscope.ranks.multirank import summarize_rank

    path = corpus("multirank/dlrm_8ranks/worker0_step_12.1694128201545.pt.trace.json.gz")
    summary = summarize_rank(str(path))
    # worker0: 5.8 ms of NCCL kernels, almost none of it beside compute
    assert 0 < summary.exposed_us <= summary.collective_us + 1e-6
    assert summary.exposed_us > 0.5 * summary.collective_us
