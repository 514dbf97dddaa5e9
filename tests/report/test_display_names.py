"""Every view shows a kernel by the one display name (`kernel_names.display_name`): no
`std::enable_if<...>::type` return type and no `cutlass::device_kernel<enable_sm90_or_later>`
in text, Markdown, HTML, `table`, or the JSON fields meant for display."""

from __future__ import annotations

import json

import pytest

import kinetoscope
from kinetoscope.analysis.table import key_averages
from kinetoscope.pipeline.table_data import profiler_table
from kinetoscope.report.html import render_html
from kinetoscope.report.markdown import render_markdown
from kinetoscope.report.table_text import render_table
from kinetoscope.report.text import render_text

from ..conftest import corpus, write_trace
from ..cutlass_names import fa3_training_events

#: corpus traces holding kernels declared with an enable_if return type, and the name each
#: must show instead: cuBLAS's `std::enable_if<!(false), void>::type
#: internal::gemvx::kernel<int, int, float, ...>(...)` (a CUDA-graph decode GEMV, 8 calls),
#: vLLM's `std::enable_if<(((8)>(0)))&&vllm::_typeConvert<c10::BFloat16>::exists,
#: void>::type vllm::fused_add_rms_norm_kernel<c10::BFloat16, 8>(...)` (72 calls)
ENABLE_IF = [
    ("gpu/sampled_rank0.json.gz", "internal::gemvx::kernel<int, int, float"),
    (
        "gpu/tracelens_b200__eager_trace.json.gz",
        "vllm::fused_add_rms_norm_kernel<c10::BFloat16, 8>",
    ),
]


def _display_strings(data):
    """Every string of the JSON report except the `name` and `raw_name` fields: an event's
    name as recorded (docs/report-schema.md), which a program looks the event up by."""
    if isinstance(data, dict):
        for k, v in data.items():
            if k not in ("name", "raw_name"):
                yield from _display_strings(v)
    elif isinstance(data, list):
        for v in data:
            yield from _display_strings(v)
    elif isinstance(data, str):
        yield data


def _views(path):
    report = kinetoscope.explain(path)
    trace = kinetoscope.load(path)
    table = render_table(profiler_table(key_averages(trace), row_limit=-1))
    return {
        "text": render_text(report),
        "markdown": render_markdown(report),
        # the page's embedded JSON escapes < > & (\u003c): read it as the page shows it
        "html": render_html(report)
        .replace("\\u003c", "<")
        .replace("\\u003e", ">")
        .replace("\\u0026", "&"),
        "json": "\n".join(_display_strings(json.loads(report.to_json()))),
        "table": table,
    }, report


@pytest.mark.parametrize(("trace", "shown"), ENABLE_IF)
def test_no_enable_if_wrapper_in_any_view(trace, shown):
    views, _ = _views(corpus(trace))
    for fmt, out in views.items():
        assert "enable_if" not in out, fmt
    # the kernel is there, under its own name: the table lists every row (cut to its
    # column), the HTML's timeline labels every kernel
    assert shown[:40] in views["table"]
    assert shown in views["html"]


def test_cutlass_wrapped_kernels_read_as_the_kernel_inside(tmp_path):
    path = write_trace(tmp_path / "fa3.json", fa3_training_events())
    views, _ = _views(path)
    for fmt, out in views.items():
        assert "device_kernel<enable_sm90_or_later>" not in out, fmt
        assert "enable_sm90_or_later" not in out, fmt
    # the kernel-name finding and the timeline name FA3 and the grouped GEMM's tile
    for fmt in ("text", "markdown", "html"):
        assert "FlashAttnBwdSm90 (FA3 backward, bf16, tile 64x128, hdim 128)" in views[fmt], fmt
        assert "grouped GEMM, fp8 e4m3, tile 256x128x128, cluster 1x2x1" in views[fmt], fmt
    assert "FlashAttnFwdSm90 (FA3 forward" in views["table"]
