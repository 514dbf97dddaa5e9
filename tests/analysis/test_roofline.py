"""Roofline: GEMM FLOPs from recorded shapes against the peak table, checked by hand."""

from __future__ import annotations

import msgspec
import pytest

from kinetoscope.analysis.peaks import PEAKS, device_peaks
from kinetoscope.analysis.roofline import rated_ops, roofline
from kinetoscope.rules.engine import run_rules
from kinetoscope.trace import load

from ..conftest import corpus


def test_one_h100_gemm_by_hand():
    # tiny_transformer_block_h100: aten::mm at +597 us, Input Dims [[2048, 512], [512, 1536]],
    # fp32 inputs, one kernel sm90_xmma_gemm_f32f32_tf32f32_f32_tn_n_... (TF32 tensor cores),
    # 17 us on the device (+677 us). Device "NVIDIA H100 80GB HBM3" = H100 SXM.
    trace = load(corpus("gpu/tiny_transformer_block_h100.pt.trace.json.gz"))
    ops, _ = rated_ops(trace)
    mm = next(o for o in ops if trace.name(o.index) == "aten::mm")
    flops = 2 * 2048 * 512 * 1536  # 2*M*K*N = 3,221,225,472
    assert mm.flops == flops
    assert mm.dtype == "tf32"
    assert mm.device_us == 17.0
    # minimum traffic: (M*K + K*N + M*N) fp32 elements = 4,980,736 * 4 B = 19,922,944 B
    assert mm.bytes == (2048 * 512 + 512 * 1536 + 2048 * 1536) * 4 == 19_922_944
    achieved = flops / 17e-6  # 189.48 TFLOP/s
    peak = device_peaks("NVIDIA H100 80GB HBM3").peak_flops("tf32")  # 494.5 TFLOP/s dense
    assert peak == 494.5e12
    assert achieved / peak == pytest.approx(0.3832, abs=1e-4)


def test_per_dtype_sum_matches_the_ops():
    trace = load(corpus("gpu/tiny_transformer_block_h100.pt.trace.json.gz"))
    ops, unrated = rated_ops(trace)
    roof = roofline(trace)
    (tf32,) = roof.rows  # every GEMM here is fp32 on TF32 tensor cores; no SDPA or conv op
    assert tf32.op_class == "gemm"
    assert tf32.ops == len(ops) == 18  # 12 sm90_xmma + 6 cutlass s1688 kernels, one op each
    assert tf32.flops == sum(o.flops for o in ops)
    assert tf32.share_of_peak == pytest.approx(
        sum(o.flops for o in ops) / (sum(o.device_us for o in ops) * 1e-6) / 494.5e12
    )
    assert all(u.kernels == 0 for u in unrated.values())


def test_compute_bound_verdict_says_share_of_peak():
    trace = load(corpus("gpu/tracelens_h100__Qwen_Qwen1.5-0.5B-Chat__1016005.json.gz"))
    (finding,) = run_rules(trace, only=["compute-bound"]).findings
    lines = [e.text for e in finding.evidence if e.unit == "of peak"]
    assert any("bf16 GEMMs" in t and "of the H100 SXM bf16 peak" in t for t in lines)


def test_unknown_device_gives_no_share():
    # "Tesla V100-DGXS-32GB" (DGX Station) is not a row: no peak is guessed
    trace = load(corpus("gpu/resnet50_dataloader_workers4.pt.trace.json.gz"))
    roof = roofline(trace)
    assert roof.peaks is None
    assert roof.rows and all(r.share_of_peak is None for r in roof.rows)


@pytest.mark.parametrize(
    ("name", "row"),
    [
        ("NVIDIA H100 PCIe", "H100 PCIe"),
        ("NVIDIA A100-SXM4-80GB", "A100 80GB SXM"),
        ("NVIDIA H200", "H200 SXM"),
        ("NVIDIA H200 NVL", None),  # 600 W part with lower peaks: not the SXM row
        ("NVIDIA GH200 480GB", None),  # Grace Hopper superchip: other memory
        ("NVIDIA GB200", None),  # Grace Blackwell: 1200 W, not the HGX B200 figures
        ("NVIDIA H100", None),  # form factor unknown
        ("AMD Instinct MI250", "AMD Instinct MI250 (per GCD)"),
        ("AMD Instinct MI250X", None),  # figures not confirmed
        ("AMD Instinct MI250X / MI250", None),  # cannot tell the two apart
        ("NVIDIA GeForce RTX 4090", "GeForce RTX 4090"),
        ("NVIDIA L4", "L4"),
        ("NVIDIA L40S", None),
    ],
)
def test_device_name_matching(name, row):
    found = device_peaks(name)
    assert (found.device if found else None) == row


#: Every device name the corpus records (`deviceProperties[].name`) and the row it must
#: get, written from what each name denotes: "NVIDIA H100 80GB HBM3" is the SXM5 part
#: (HBM3, 80 GB), the NVL and the DGX Station V100 have no confirmed figures, the
#: A100-PG509-200 is an OEM board whose memory is not known, "MI300X VF" is the
#: virtual function of an MI300X, and an MI250 ROCm reports as "AMD Radeon Graphics".
CORPUS_DEVICES = {
    "NVIDIA A100-PG509-200": "A100 (40GB or OEM variant)",
    "NVIDIA A100 80GB PCIe": "A100 80GB PCIe",
    "NVIDIA H100 80GB HBM3": "H100 SXM",
    "NVIDIA H100 NVL": None,
    "NVIDIA B200": "B200 (HGX B200, per GPU)",
    "NVIDIA GeForce RTX 2080 Ti": "GeForce RTX 2080 Ti (reference clocks)",
    "Tesla V100-SXM2-32GB": "Tesla V100 SXM2",
    "Tesla V100-DGXS-32GB": None,
    "AMD Instinct MI210": "AMD Instinct MI210",
    "AMD Instinct MI300X": "AMD Instinct MI300X",
    "AMD Instinct MI300X VF": "AMD Instinct MI300X",
    "AMD Radeon Graphics": None,
}


class _DeviceProperties(msgspec.Struct):
    """A trace's top level as far as this test reads it: msgspec skips every other key
    (the events) without building them, where json.load built each one (10.6 s of CPU for the
    corpus here; 1.2 s this way)."""

    deviceProperties: list[dict] = []


def _recorded_device_names() -> set[str]:
    """The non-empty device names in the corpus traces' deviceProperties."""
    import gzip

    from ..conftest import corpus_files

    names = set()
    for path in corpus_files():
        raw = gzip.decompress(path.read_bytes()) if path.suffix == ".gz" else path.read_bytes()
        if raw.lstrip()[:1] == b"[":  # a bare list of events: no properties
            continue
        top = msgspec.json.decode(raw, type=_DeviceProperties)
        names |= {p.get("name") for p in top.deviceProperties if p.get("name")}
    return names


def test_every_corpus_device_name_maps_to_its_row():
    names = _recorded_device_names()
    if not names:
        pytest.skip("corpus not found")
    assert names == set(CORPUS_DEVICES)  # a new corpus device needs a decision here
    for name, row in CORPUS_DEVICES.items():
        found = device_peaks(name)
        assert (found.device if found else None) == row, name


def test_every_row_cites_a_source_and_has_a_peak():
    for _, peaks in PEAKS:
        assert peaks.source and "http" in peaks.url and peaks.tflops
        assert all(v > 0 for v in peaks.tflops.values())


def test_sparse_figures_are_halved():
    # the datasheets print 2:4-sparse tensor rates; dense is half (H100 SXM: 989 TF32*,
    # 1,979 BF16*, 3,958 FP8*; MI300X ROCm table: dense 1307.4 BF16, 2614.9 FP8)
    h100 = device_peaks("NVIDIA H100 80GB HBM3")
    assert (h100.tflops["tf32"], h100.tflops["bf16"], h100.tflops["fp8"]) == (494.5, 989.5, 1979.0)
    mi300x = device_peaks("AMD Instinct MI300X")
    assert (mi300x.tflops["bf16"], mi300x.tflops["fp8"]) == (1307.4, 2614.9)


def test_mi250_row_is_one_gcd():
    # each GCD is its own HIP device: half the OAM's 362.1 TFLOP/s and 3.2 TB/s
    row = device_peaks("AMD Instinct MI250")
    assert row.tflops["bf16"] == pytest.approx(362.1 / 2) and row.bandwidth_gbs == 1600.0


def test_sweep_point_and_plot_carry_the_share_of_peak(tmp_path):
    from kinetoscope.compare.sweep import Crossover, measure
    from kinetoscope.compare.sweep_doc import rate_series, sweep_document
    from kinetoscope.report.sweep_model import STEP_RATE
    from kinetoscope.report.sweep_render import table_rows

    trace = load(corpus("gpu/tracelens_h100__Qwen_Qwen1.5-0.5B-Chat__1016005.json.gz"))
    point = measure(trace, 1.0)
    roof = roofline(trace)
    bf16 = roof.of_class("gemm")[0]  # bf16 GEMMs own the most device time here
    assert bf16.dtype == "bf16"
    assert point.share_of_peak == bf16.share_of_peak
    # the trace has rated GEMMs and SDPA calls (flash, bf16), no convolution
    assert set(point.classes) == {"gemm", "attention"}
    attention = roof.summary("attention")
    assert point.classes["attention"]["tflops"] == attention.achieved_flops / 1e12
    assert point.classes["attention"]["share_of_peak"] == attention.share_of_peak
    none = Crossover("device", None, "")
    headers, rows = table_rows(sweep_document("size", [point], none))
    assert headers[-2:] == ["GEMM % of peak", "attention % of peak"]
    assert rows[0][-1].endswith("%") and rows[0][-2].endswith("%")
    other = measure(trace, 2.0)
    rates, shares = rate_series([point, other])  # what the plot's rate panel draws
    assert set(rates) == {STEP_RATE, "gemm", "attention"} and set(shares) == {"gemm", "attention"}
    rate = attention.achieved_flops / 1e12
    assert rates["attention"] == [(1.0, rate), (2.0, rate)]
    pytest.importorskip("matplotlib")
    from kinetoscope.commands.sweep import plot_sweep

    written = plot_sweep(sweep_document("size", [point, other], none), "t", tmp_path / "s")
    assert all(w is not None and w.stat().st_size > 0 for _, w in written)
