"""The kernel view in every format: text, Markdown, HTML and JSON show the same Tensor
Core share, occupancy and per-kernel cells from `Report.kernels`; a trace without
kernels shows none of it."""

from __future__ import annotations

import json

import kinetoscope
from kinetoscope.report.html import render_html
from kinetoscope.report.markdown import render_markdown
from kinetoscope.report.text import render_text

from ..conftest import corpus

H100_QWEN = "gpu/tracelens_h100__Qwen_Qwen1.5-0.5B-Chat__1016005.json.gz"


def _formats(report) -> dict[str, str]:
    return {
        "text": render_text(report, width=200),
        "markdown": render_markdown(report).replace("\\", ""),
        "html": render_html(report),
    }


def test_h100_kernel_view_in_every_format():
    report = kinetoscope.explain(corpus(H100_QWEN))
    kv = json.loads(report.to_json())["kernels"]
    json.dumps(report.kernels, allow_nan=False)  # plain Python values (MCP serialises them)
    # JSON fields named for what they hold
    assert 0 < kv["tensor_core_share"] < 1
    assert 0 < kv["est_achieved_occupancy"] <= 1
    top = kv["kernels"][0]
    assert top["raw_name"].startswith("sm90_xmma_gemm_bf16bf16")
    assert top["tensor_cores"] is True and top["registers_per_thread"] == 168
    assert top["shared_memory_bytes"] == 231424 and top["block"] == [384, 1, 1]
    assert top["occupancy_limiters"] == ["registers", "shared memory"]
    share = f"{kv['tensor_core_share'] * 100:.1f}%"
    occ = f"{kv['est_achieved_occupancy'] * 100:.1f}%"
    for name, out in _formats(report).items():
        assert f"Tensor Cores (estimate from kernel names): {share}" in out.replace(
            "<b>", ""
        ).replace("</b>", ""), name
        assert f"weighted by time: {occ}" in out, name
        assert "231,424" in out or "231424" in out, name
        assert "fp32 GEMM/convolution without TF32" in out, name


def test_no_kernel_view_without_kernels():
    report = kinetoscope.explain(corpus("cpu/cpu_only_rank34.pt.trace.json.gz"))
    assert json.loads(report.to_json())["kernels"] == {}
    for name, out in _formats(report).items():
        assert "Tensor Cores (estimate" not in out, name
