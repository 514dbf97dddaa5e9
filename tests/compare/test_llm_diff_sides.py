"""Serving diffs (compare/llm_diff.py): passes aligned by phase, per-pass kernel time with
communication apart against the pass's wall time, and the side a change lies on; pairs
built so the side is known by construction, and the corpus' Qwen H100 / MI300X pair."""

from __future__ import annotations

import pytest

from kinetoscope.analysis.kernel_types import kernel_type
from kinetoscope.compare.diff import diff_runs
from kinetoscope.compare.runs import load_run

from ..conftest import corpus, kernel, launch, op, write_trace

STEP = "execute_{t}_context_{c}(sq{q}sk{q}sqsq0sqsk0)_generation_{g}(sq{g}sk{k}sqsq0sqsk0)"
ALL_REDUCE = "ncclDevKernel_AllReduce_Sum_bf16_RING_LL(ncclDevKernelArgsStorage<4096ul>)"


def _run(tmp_path, name, kernel_us=100.0, gap_us=20.0, comm_us=50.0, teardown_us=0.0):
    """A prefill step then 4 decode steps, 10 ms apart, each launching 20 kernels
    `gap_us` apart on the host, each `kernel_us` long, then one all-reduce of `comm_us`.
    With 100 us kernels 20 us apart the device sets the pace; with 10 us kernels 60 us
    apart the host does. `teardown_us` of profiler teardown after the last step."""
    events, corr = [], 0
    names = [STEP.format(t=40, c=1, q=40, g=0, k=0)]
    names += [STEP.format(t=1, c=0, q=0, g=1, k=41 + n) for n in range(4)]
    for k, label in enumerate(names):
        t0 = 1000.0 + 10_000.0 * k
        cursor = t0
        host = t0 + 10
        for j in range(21):
            corr += 1
            events.append(launch(host, 5, corr))
            dur = comm_us if j == 20 else kernel_us
            cursor = max(cursor, host + 8)
            events.append(kernel(ALL_REDUCE if j == 20 else f"gemm{j}", cursor, dur, corr))
            cursor += dur
            host += gap_us
        events.append(op(label, t0, max(cursor, host) - t0 + 5, cat="user_annotation"))
    if teardown_us:
        events.append(op("ProfilerTeardown", 52_000.0, teardown_us))
    return load_run(write_trace(tmp_path / name, events))


def test_all_reduce_is_communication():
    assert kernel_type(ALL_REDUCE) == "communication"


@pytest.mark.parametrize(
    ("b", "side"),
    [
        ({"kernel_us": 200.0}, "device compute"),  # every kernel twice as long
        ({"kernel_us": 100.0, "comm_us": 1500.0}, "communication"),  # the all-reduce 30x
        # host-bound on both: kernels of 10 us launched 60 us apart (A) and 150 us apart (B)
        ({"kernel_us": 10.0, "gap_us": 150.0}, "host"),
    ],
)
def test_slowdown_side_is_the_one_built_slower(tmp_path, b, side):
    a_kw = {"kernel_us": 10.0, "gap_us": 60.0} if side == "host" else {}
    d = diff_runs(_run(tmp_path, "a.json", **a_kw), _run(tmp_path, "b.json", **b))
    decode = next(r for r in d.llm["phases"] if r["phase"] == "decode")
    assert decode["a"]["passes"] == decode["b"]["passes"] == 4
    assert decode["side"]["side"] == side and decode["side"]["ratio"] > 1
    assert decode["a"]["comm_per_pass_us"] == pytest.approx(50.0)
    assert decode["a"]["compute_per_pass_us"] == pytest.approx(
        20 * (10.0 if side == "host" else 100.0)
    )
    where = {
        "host": "on the host",
        "communication": "in communication",
        "device compute": "on the device (compute kernels)",
    }[side]
    assert decode["side"]["sentence"].endswith(f"the slowdown is {where}.")
    assert "Over the passes (teardown excluded)" in d.conclusion


def test_teardown_outside_the_passes_does_not_enter_the_pass_comparison(tmp_path):
    """B adds 30 ms of teardown after its last step: the windows differ, the passes not."""
    d = diff_runs(_run(tmp_path, "a.json"), _run(tmp_path, "b.json", teardown_us=30_000.0))
    decode = next(r for r in d.llm["phases"] if r["phase"] == "decode")
    assert decode["a"]["per_pass_us"] == pytest.approx(decode["b"]["per_pass_us"])
    assert decode["side"] is None


def test_qwen_h100_to_mi300x_prefill_is_faster_on_the_device():
    """One prefill forward each (16 x 559 tokens): MI300X's kernels take 29.7 ms of the
    pass against H100's 31.9 ms, no communication kernel, and the pass 33.3 ms against
    35.0 ms: the device's change is the pass's change."""
    d = diff_runs(
        load_run(corpus("gpu/tracelens_h100__Qwen_Qwen1.5-0.5B-Chat__1016005.json.gz")),
        load_run(corpus("gpu/tracelens_mi300__Qwen_Qwen1.5-0.5B-Chat__1016005.json.gz")),
    )
    (prefill,) = d.llm["phases"]
    assert prefill["phase"] == "prefill"
    assert prefill["a"]["comm_per_pass_us"] == prefill["b"]["comm_per_pass_us"] == 0
    assert prefill["a"]["compute_per_pass_us"] == pytest.approx(31_905, abs=1)
    assert prefill["b"]["compute_per_pass_us"] == pytest.approx(29_744, abs=1)
    assert prefill["side"]["side"] == "device compute" and prefill["side"]["ratio"] < 1
    assert "the speed-up is on the device" in prefill["side"]["sentence"]
