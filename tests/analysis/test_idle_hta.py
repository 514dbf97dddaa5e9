"""gpu-idle-breakdown against HolisticTraceAnalysis on the same corpus traces.

Runs only where HTA is installed (a separate environment: HTA pulls pandas,
plotly, jupyter). Per stream, the three shares (host wait, kernel wait, other)
must agree within 5 percentage points; measured: 0.0 points on all but
resnet_train_ns (0.40) and the Qwen H100 trace (0.23), idle totals within 0.1%.
Two HTA defaults are switched off so both tools look at the same events, and
the test says why:
- `include_last_profiler_step=True`: by default HTA drops the last
  ProfilerStep and every device event not launched before it; kinetoscope keeps
  the whole window.
- `HTA_DISABLE_NS_ROUNDING=1`: by default HTA rounds nanosecond-resolution
  timestamps to whole microseconds (start up, end down), which opens a 1 us gap
  between back-to-back kernels and moves time into "kernel wait"; with rounding
  on, the Qwen H100/MI300X and MI210 traces differ by 10-41 percentage points.
Not compared: compare_base/compare_test (HTA's filter of kernels without a
launching CPU op drops most of their device events) and the traces HTA fails to
load (cupti_counters: no kernels; resnet_act_checkpoint, torch_compile_triton,
xdit_flux: an int8/int16 downcast error inside HTA's parser).
"""

from __future__ import annotations

import logging
import shutil

import pytest

from kinetoscope.analysis.idle import CATEGORIES, idle_breakdown
from kinetoscope.trace import load

from ..conftest import corpus

hta_trace_analysis = pytest.importorskip("hta.trace_analysis")

TRACES = [
    "gpu/resnet50_dataloader_workers4.pt.trace.json.gz",
    "gpu/tiny_transformer_block_h100.pt.trace.json.gz",
    "gpu/amd_mi250_minitoy_train.json.gz",
    "gpu/cuda_event_sync_multi_stream.json.gz",
    "gpu/sampled_rank1.json.gz",
    "gpu/resnet_train_ns.pt.trace.json.gz",
    "gpu/tracelens_mi300__Qwen_Qwen1.5-0.5B-Chat__1016005.json.gz",
    "gpu/tracelens_mi210__gpu_only_trace.json.gz",
    "gpu/switch_transformer_moe_a100.json.gz",
    "gpu/tracelens_h100__Qwen_Qwen1.5-0.5B-Chat__1016005.json.gz",
    "gpu/ncompass_train_with_stack_h100nvl.pt.trace.json.gz",
    "gpu/tracelens_b200__eager_trace.json.gz",
    "gpu/tracelens_sglang_decode__sglang_Qwen3-8B_decode.json.gz",
    "gpu/simple_add_a100.json.gz",
    "multirank/dlrm_8ranks/worker7_step_12.1694128201553.pt.trace.json.gz",
]


@pytest.mark.parametrize("name", TRACES)
def test_idle_shares_match_hta_per_stream(name, tmp_path, monkeypatch):
    path = corpus(name)
    trace = load(path)
    monkeypatch.setenv("HTA_DISABLE_NS_ROUNDING", "1")
    shutil.copy(path, tmp_path / path.name)
    logging.disable(logging.WARNING)
    try:
        analysis = hta_trace_analysis.TraceAnalysis(
            trace_dir=str(tmp_path), include_last_profiler_step=True
        )
        rank = next(iter(analysis.t.traces))
        df, _ = analysis.get_idle_time_breakdown(ranks=[rank], visualize=False)
    finally:
        logging.disable(logging.NOTSET)
    ours = {trace.lanes[stream.lane].stream: stream.total for stream in idle_breakdown(trace)}
    assert set(ours) == {int(stream) for stream in df.stream.unique()}
    for stream, theirs in df.groupby("stream"):
        total = float(theirs.idle_time.sum())
        split = ours[int(stream)]
        assert split.idle == pytest.approx(total, rel=0.02)  # same gaps, same events
        for category in CATEGORIES:
            share = float(theirs[theirs.idle_category == category].idle_time.sum()) / total
            assert abs(split.share(category) - share) <= 0.01, (stream, category, share)
