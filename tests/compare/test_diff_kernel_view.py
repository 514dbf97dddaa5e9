"""`diff` carries the kernel view before and after (compare/kernel_view_diff.py): Tensor
Core share and occupancy of both runs, and per kernel both runs ran (exact names)."""

from __future__ import annotations

import json

from kinetoscope.compare.diff import diff_runs
from kinetoscope.compare.runs import load_run
from kinetoscope.report.diff_render import to_html, to_markdown, to_text

from ..conftest import corpus

W0 = "gpu/resnet50_dataloader_workers0.pt.trace.json.gz"
W4 = "gpu/resnet50_dataloader_workers4.pt.trace.json.gz"
H100 = "gpu/tracelens_h100__Qwen_Qwen1.5-0.5B-Chat__1016005.json.gz"
MI300 = "gpu/tracelens_mi300__Qwen_Qwen1.5-0.5B-Chat__1016005.json.gz"


def test_same_model_matches_kernels_by_name():
    """The two ResNet-50 runs on one V100 launch the same cuDNN kernels."""
    d = diff_runs(load_run(corpus(W0)), load_run(corpus(W4)))
    kv = json.loads(json.dumps(d.to_dict()))["kernel_view"]
    assert kv["a"]["tensor_core_share"] == 0.0 == kv["b"]["tensor_core_share"]  # fp32 V100
    assert kv["a"]["fp32_without_tf32_us"] is None  # V100: no TF32
    assert kv["matched_kernels"] > 10
    names = [k["raw_name"] for k in kv["kernels"]]
    assert any("dgrad_engine" in n for n in names)
    for k in kv["kernels"]:
        assert k["est_achieved_occupancy"]["a"] is not None
    for out in (to_text(d), to_markdown(d), to_html(d)):
        assert "Kernel view (A -" in out
        assert "Tensor Cores (estimate from kernel names): 0.0% -" in out


def test_cross_vendor_shares_no_gemm():
    """H100 against MI300X: both use matrix units, but only ATen's own kernels (the same
    source built for CUDA and HIP) share a name, never a GEMM; the MI300X side has no
    occupancy (roctracer records no registers)."""
    d = diff_runs(load_run(corpus(H100)), load_run(corpus(MI300)))
    kv = d.kernel_view
    assert kv["kernels"] and all(k["tensor_cores"] is False for k in kv["kernels"])
    assert all(k["est_achieved_occupancy"]["b"] is None for k in kv["kernels"])
    assert kv["a"]["tensor_core_share"] > 0 and kv["b"]["tensor_core_share"] > 0
    assert kv["a"]["est_achieved_occupancy"] is not None
    assert kv["b"]["est_achieved_occupancy"] is None
