"""The diff weighs the two sets of steps, and says what changed around the program first.

Each case is built so its answer is known before the tool runs: steps of given
durations (a step is one `aten::mm` filling most of it), a GPU of a given
compute capability, a job of a given world size, blocking syncs of a given
length. The seen defect: six steps of B at 82-166 ms against six of A at
75-81 ms, every B step slower than every A step, was called "noise" because
the medians' difference (+37.9 ms) was smaller than B's spread (53 ms).
"""

from __future__ import annotations

import re

import pytest

from kinetoscope.compare.conclusion import times
from kinetoscope.compare.diff import diff_runs
from kinetoscope.compare.runs import load_run
from kinetoscope.compare.shift import median_shift

from ..conftest import corpus, kernel, launch, op, write_trace

#: the issue's step times, in ms
A_STEPS = [75, 81, 77, 79, 76, 80]
B_STEPS = [82, 166, 90, 140, 95, 120]


def _run(tmp_path, name, steps_ms, *, cc=(8, 0), gpu="NVIDIA A100-SXM4-80GB", world=None,
         sgemm="ampere_sgemm_128x64_nn", sync_us=0.0, mm_share=None):  # fmt: skip
    """Steps of the given durations; each holds one aten::mm (`mm_share` of the step, 90%
    unless given per step) launching one GEMM, and, with `sync_us`, a blocking
    cudaStreamSynchronize after it."""
    events, t0 = [], 0.0
    for i, ms in enumerate(steps_ms):
        dur = ms * 1000
        share = 0.9 if mm_share is None else mm_share[i]
        events.append(op(f"ProfilerStep#{i}", t0, dur, cat="user_annotation"))
        events.append(op("aten::mm", t0 + 10, share * dur - 20 - sync_us))
        events.append(launch(t0 + 20, 10, i + 1))
        events.append(kernel(sgemm, t0 + 40, 0.5 * dur, i + 1))
        if sync_us:
            events.append(op("cudaStreamSynchronize", t0 + 0.9 * dur - sync_us, sync_us,
                             cat="cuda_runtime"))  # fmt: skip
        t0 += dur
    top = {
        "deviceProperties": [
            {"id": 0, "name": gpu, "computeMajor": cc[0], "computeMinor": cc[1], "numSms": 80}
        ]
    }
    if world is not None:
        top["distributedInfo"] = {"backend": "nccl", "rank": 0, "world_size": world}
    return write_trace(tmp_path / name, events, **top)


def _diff(a, b):
    return diff_runs(load_run(a), load_run(b))


def _step(d):
    return d.decomposition[0]


# ---- the step change, weighed over the steps ------------------------------------------


def test_every_b_step_slower_is_a_loss_not_noise(tmp_path):
    """The issue's numbers: the old rule (|median difference| <= spread) called it noise."""
    d = _diff(_run(tmp_path, "a.json", A_STEPS), _run(tmp_path, "b.json", B_STEPS))
    step = _step(d)
    assert step.delta_us == pytest.approx((107.5 - 78) * 1000)  # medians of the sets
    assert step.noise_us > abs(step.delta_us)  # what fooled the old rule
    assert step.status == "loss" and step.low_us > 0
    assert "a loss (95% interval" in d.conclusion
    assert "noise, not a gain or a loss" not in d.conclusion


def test_overlapping_steps_are_noise(tmp_path):
    """The same six durations in another order and one step slower: the sets overlap and
    the median moves 1 ms within steps spread over 6 ms: noise."""
    b = [81, 76, 80, 75, 78, 79]
    d = _diff(_run(tmp_path, "a.json", A_STEPS), _run(tmp_path, "b.json", b))
    step = _step(d)
    assert step.status == "noise" and step.low_us <= 0 <= step.high_us
    assert "that is noise, not a gain or a loss" in d.conclusion


def test_two_steps_each_are_too_few_to_judge(tmp_path):
    """With 2 steps a run, the 'interval' would be the steps themselves: no verdict."""
    d = _diff(_run(tmp_path, "a.json", [75, 76]), _run(tmp_path, "b.json", [150, 160]))
    assert _step(d).status == "unmeasured" and _step(d).low_us is None
    assert "no interval can be computed" in d.conclusion
    assert "The loss is" not in d.conclusion and "If the step's" in d.conclusion


def test_median_shift_is_deterministic_and_only_noise_where_sets_overlap():
    a, b = [75.0, 81, 77, 79, 76, 80], [82.0, 166, 90, 140, 95, 120]
    assert median_shift(a, b) == median_shift(a, b)  # fixed seed
    apart = median_shift(a, [x + 7 for x in a])  # 82-88 vs 75-81: no overlap
    assert not apart.overlap and apart.real and apart.low > 0


def test_parts_add_up_to_the_step(tmp_path):
    """A's three steps split differently between the op (dispatch) and Python/other:
    100 ms (95% in the op), 101 ms (5%), 300 ms (97%). Part by part the medians are
    dispatch 95 ms and Python/other 10.2 ms: 105 ms beside a 101 ms median step, parts
    that move by more than the step does. The median step's own parts add up to it."""
    a = _run(tmp_path, "a.json", [100, 101, 300], mm_share=[0.95, 0.05, 0.97])
    b = _run(tmp_path, "b.json", [50, 50, 50], mm_share=[0.1, 0.1, 0.1])
    d = _diff(a, b)
    step, parts = d.decomposition[0], d.decomposition[1:]
    host = [c for c in parts if c.words != "device busy"]
    for side in ("a_us", "b_us"):
        assert sum(getattr(c, side) for c in host) == pytest.approx(getattr(step, side))
    assert sum(c.delta_us for c in host) == pytest.approx(step.delta_us)
    dispatch = next(c for c in parts if c.words == "dispatch + launch")
    assert dispatch.a_us == pytest.approx(0.05 * 101_000 - 20, abs=1)  # the 101 ms step's
    assert all(abs(c.delta_us) <= max(step.a_us, step.b_us) for c in parts)


# ---- wording ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    "ratio, text", [(1.34, "1.3"), (2.0, "2"), (14.2, "14"), (150.22, "150"), (1234.0, "1200")]
)
def test_ratios_read_as_people_write_them(ratio, text):
    assert times(ratio) == text


def test_a_large_ratio_has_no_exponent(tmp_path):
    d = _diff(_run(tmp_path, "a.json", [140] * 4), _run(tmp_path, "b.json", [1.0] * 4))
    assert "B is 140x faster per step" in d.conclusion
    assert not re.search(r"\de[+-]\d", d.conclusion)


# ---- what changed around the program, before any kernel --------------------------------


def test_world_size_and_architecture_from_the_trace_not_kernel_names(tmp_path):
    """A100 (compute capability 8.0) on 8 ranks -> V100 (7.0) on 2 ranks. The GEMM kernels
    are named after the architecture cuBLAS built them for; that is not the GPU."""
    a = _run(tmp_path, "a.json", A_STEPS, world=8, sgemm="turing_sgemm_128x64_nn")
    b = _run(tmp_path, "b.json", A_STEPS, world=2, cc=(7, 0), gpu="Tesla V100-SXM2-32GB",
             sgemm="volta_sgemm_128x64_nn")  # fmt: skip
    d = _diff(a, b)
    rows = {r.field: (r.a, r.b) for r in d.environment.differences}
    assert rows["world size"] == ("8 ranks", "2 ranks")
    assert rows["GPU architecture"] == (
        "Ampere (compute capability 8.0)",
        "Volta (compute capability 7.0)",
    )
    text = d.conclusion
    assert "A ran as 8 ranks, B as 2 ranks" in text
    kernels = text.index("Kernels are matched by name")
    assert text.index("8 ranks") < kernels and text.index("Volta") < kernels
    (swap,) = d.kernels.by_status("replaced")
    assert "arch" not in swap.change and "turing" not in swap.change
    assert "turing -> volta" not in text


def test_one_world_size_is_no_row(tmp_path):
    a = _run(tmp_path, "a.json", A_STEPS, world=8)
    d = _diff(a, _run(tmp_path, "b.json", B_STEPS, world=8))
    assert not any(r.field in ("world size", "GPU architecture") for r in d.environment.differences)
    assert "ranks" not in d.conclusion


def test_new_blocking_waits_are_said_before_kernels(tmp_path):
    """B blocks 30 ms a step in cudaStreamSynchronize: said, with its size, before kernels."""
    a = _run(tmp_path, "a.json", A_STEPS)
    b = _run(tmp_path, "b.json", A_STEPS, sync_us=30_000)
    d = _diff(a, b)
    wa, wb = d.waits
    assert wa.total_us == 0 and wb.total_us == pytest.approx(6 * 30_000)
    assert wb.top_call == "cudaStreamSynchronize"
    text = d.conclusion
    assert "The host waits more for the device in blocking calls" in text
    assert "B 180 ms in 6 blocking call(s), mostly cudaStreamSynchronize" in text
    assert text.index("blocking calls") < text.index("The device")


def test_no_waits_no_sentence(tmp_path):
    d = _diff(_run(tmp_path, "a.json", A_STEPS), _run(tmp_path, "b.json", B_STEPS))
    assert "blocking calls" not in d.conclusion


# ---- the corpus -------------------------------------------------------------------------


def test_sampled_ranks_name_no_cause_on_two_steps():
    """sampled_rank0/1: two steps each (615 and 619 ms medians): nothing can be judged."""
    d = _diff(corpus("gpu/sampled_rank0.json.gz"), corpus("gpu/sampled_rank1.json.gz"))
    assert _step(d).status == "unmeasured"
    assert "The loss is" not in d.conclusion and "The gain is" not in d.conclusion
    # both ranks of one 128-rank job: no world-size row
    assert not any(r.field == "world size" for r in d.environment.differences)


def test_amd_architecture_is_not_read_as_an_nvidia_compute_capability():
    """MI300X reports major.minor 9.4 (its gfx94x family); read as NVIDIA's 9.x it would be
    'Hopper', the H100's architecture."""
    d = _diff(
        corpus("gpu/tracelens_h100__Qwen_Qwen1.5-0.5B-Chat__1016005.json.gz"),
        corpus("gpu/tracelens_mi300__Qwen_Qwen1.5-0.5B-Chat__1016005.json.gz"),
    )
    rows = {r.field: (r.a, r.b) for r in d.environment.differences}
    assert rows["GPU architecture"] == ("Hopper (compute capability 9.0)", "AMD gfx94x")
