"""The GPU's architecture comes from deviceProperties, never from a library kernel's name.

Expectations read from the traces first: `zcat ... | grep -A8 deviceProperties` for the
name and computeMajor/computeMinor, and the kernels' names for their build targets.
"""

from __future__ import annotations

import pytest

from kinetoscope.analysis.gpu_arch import gpu_arch
from kinetoscope.analysis.kernel_names import decode
from kinetoscope.rules.engine import run_rules
from kinetoscope.trace import load

from ..conftest import corpus


@pytest.mark.parametrize(
    ("trace", "arch", "cc", "kernel_targets"),
    [
        # RTX 2080 Ti: cuBLAS's volta_sgemm_* kernels on a Turing GPU
        ("gpu/param_linear_train_2080ti.json.gz", "Turing", "7.5", {"volta"}),
        # H100 NVL: sm80_xmma / cutlass_80 kernels on a Hopper GPU
        ("gpu/ncompass_train_with_stack_h100nvl.pt.trace.json.gz", "Hopper", "9.0", {"sm80"}),
        ("gpu/switch_transformer_moe_a100.json.gz", "Ampere", "8.0", None),
        ("gpu/tracelens_b200__eager_trace.json.gz", "Blackwell", "10.0", None),
        ("gpu/tracelens_mi300__resnet_act_checkpoint.json.gz", "CDNA3 (gfx94x)", "9.4", None),
    ],
)
def test_arch_from_device_properties_not_kernel_names(trace, arch, cc, kernel_targets):
    t = load(corpus(trace))
    found = gpu_arch(t)
    assert (found.name, found.compute_capability) == (arch, cc)
    assert found.source == "deviceProperties compute capability"
    if kernel_targets:
        targets = {decode(t.names[i]).arch for i in set(t.name_id[t.kernels].tolist())}
        assert kernel_targets <= targets  # the names say another architecture
        assert not any(found.is_target(k) for k in kernel_targets)


def test_no_device_properties_no_arch():
    # sampled_rank0 has sm80/ampere kernels but no deviceProperties: the names are not the GPU
    assert gpu_arch(load(corpus("gpu/sampled_rank0.json.gz"))) is None


def _tf32(trace):
    return [f for f in run_rules(load(corpus(trace)), only=["fp32-gemm-tf32"]).findings]


def test_tf32_advice_on_ampere_with_the_expected_gain():
    (finding,) = _tf32("gpu/switch_transformer_moe_a100.json.gz")
    assert finding.measured["gpu_arch"] == "Ampere"
    assert finding.measured["fp32_gemm_share"] == pytest.approx(0.94, abs=0.01)
    assert finding.measured["tf32_over_fp32_peak"] == 8.0  # A100: 156 / 19.5 TFLOP/s
    assert "allow_tf32" in finding.suggestion


def test_tf32_advice_on_hopper_says_the_kernel_target_is_not_the_gpu():
    (finding,) = _tf32("gpu/ncompass_train_with_stack_h100nvl.pt.trace.json.gz")
    assert finding.measured["gpu_arch"] == "Hopper"
    assert finding.measured["tf32_over_fp32_peak"] is None  # H100 NVL: no peak row
    assert any(
        "'sm80' in the name is the kernel's build target" in e.text for e in finding.evidence
    )


@pytest.mark.parametrize(
    "trace",
    [
        "gpu/param_linear_train_2080ti.json.gz",  # Turing (named volta_sgemm): no TF32
        "gpu/resnet_train_ns.pt.trace.json.gz",  # Volta
        "gpu/tiny_transformer_block_h100.pt.trace.json.gz",  # already TF32 (f32f32_tf32f32)
        "gpu/tracelens_mi300__Qwen_Qwen1.5-0.5B-Chat__1016005.json.gz",  # AMD
    ],
)
def test_no_tf32_advice_without_tf32_tensor_cores_or_fp32_gemms(trace):
    assert _tf32(trace) == []
