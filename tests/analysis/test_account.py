"""The window account (issue 31): every instant of the window in one class, by what held
it, with a case where each class must hold time and one where it must not.

Each expectation was read from the trace before the account existed (`kinetoscope chain`,
`table` and the events around the named times); the numbers are the trace's.
"""

from __future__ import annotations

import pytest

import kinetoscope
from kinetoscope.analysis.account.account import CLASSES, window_account
from kinetoscope.analysis.account.path import critical_path

from ..conftest import corpus, kernel, launch, op, write_trace

RESNET = "gpu/resnet_train_ns.pt.trace.json.gz"  # 5 steps, device busy 97%
WORKERS0 = "gpu/resnet50_dataloader_workers0.pt.trace.json.gz"
WORKERS4 = "gpu/resnet50_dataloader_workers4.pt.trace.json.gz"
ALEXNET = "gpu/alexnet_train.json.gz"
SGLANG = "gpu/tracelens_sglang_decode__sglang_Qwen3-8B_decode.json.gz"
VLLM = "gpu/tracelens_vllm_prefilldecode_piecewise__graph_execution.json.gz"
TINY = "gpu/tiny_transformer_block_h100.pt.trace.json.gz"
MULTI_STREAM = "gpu/cuda_event_sync_multi_stream.json.gz"
B200 = "gpu/tracelens_b200__eager_trace.json.gz"


def shares(relative: str) -> dict[str, float]:
    return window_account(kinetoscope.load(corpus(relative))).shares()


@pytest.mark.parametrize(
    "relative", [RESNET, WORKERS0, ALEXNET, SGLANG, VLLM, TINY, MULTI_STREAM, B200]
)
def test_the_classes_cover_the_window_and_the_path_adds_up(relative):
    trace = kinetoscope.load(corpus(relative))
    account = window_account(trace)
    assert sum(account.shares().values()) == pytest.approx(1.0, abs=1e-9)
    path = critical_path(trace)
    assert float(path.dur.sum()) == pytest.approx(account.window_us, rel=1e-9)
    segments, _ = path.segments(trace)
    assert sum(s.dur for s in segments) == pytest.approx(account.window_us, rel=1e-9)
    starts = [s.start for s in segments]
    assert starts == sorted(starts)


# (class, trace where it must hold at least `low` of the window, trace where it must hold
# at most `high`)
CASES = [
    # ResNet-50 training, 870 kernels a step, the queue 44-78 ms ahead of the host;
    # bert-small on an H100: 309 us of kernels in a 4.4 ms window
    (
        "device",
        RESNET,
        0.9,
        "gpu/tracelens_h100__gaunernst_bert-small-uncased__1016001.json.gz",
        0.1,
    ),
    # a transformer block's 16 small kernels a step: the host between ops most of the step
    ("python", TINY, 0.25, RESNET, 0.02),
    ("dispatch", TINY, 0.4, RESNET, 0.02),
    # num_workers=0: __next__ holds 62-73 ms of each 164-181 ms step; with 4 workers ~1%
    ("data", WORKERS0, 0.3, WORKERS4, 0.02),
    # SGLang: one hipMemcpyWithStream blocks 463 ms with every stream idle (the device
    # runs 9.8 ms in all); ResNet's syncs wait on a busy device
    ("external", SGLANG, 0.9, RESNET, 0.0),
    # AlexNet: cudaDeviceGetStreamPriorityRange, the first runtime call, lasts 29.9 s
    # (context creation); ResNet-50 with 4 workers ran 5 steps before the window, so its
    # 40 ms first cudaMemcpyAsync is no context start-up
    ("one_time", ALEXNET, 0.85, WORKERS4, 0.0),
    # vLLM serving without steps: 125 ms between engine steps with nothing recorded;
    # a trace with steps is never untraced
    ("untraced", VLLM, 0.3, RESNET, 0.0),
    # 42.7 ms before the first and after the last event of a 62.6 ms capture; a window of
    # steps holds no profiler head or tail
    ("profiler", MULTI_STREAM, 0.6, RESNET, 0.0),
]


@pytest.mark.parametrize(
    ("cls", "fires", "low", "silent", "high"), CASES, ids=[c[0] for c in CASES]
)
def test_each_class_holds_time_where_it_must_and_not_where_it_must_not(
    cls, fires, low, silent, high
):
    assert shares(fires)[cls] >= low
    assert shares(silent)[cls] <= high


def _sync_loop(path, kernel_us: float, wake_us: float = 8.0):
    """3 steps of 20 iterations: an op launches one kernel (5 us call), the kernel starts
    2 us after the call returns and runs `kernel_us`, and the host reads it back at once:
    a cudaStreamSynchronize from the launch's return until `wake_us` after the kernel."""
    events, corr, t = [], 1, 0.0
    for n in range(3):
        start = t
        for _ in range(20):
            events.append(op("aten::add", t, 5.0))
            events.append(launch(t, 5.0, correlation=corr))
            k0 = t + 7.0
            events.append(kernel("elementwise_add", k0, kernel_us, correlation=corr))
            sync_end = k0 + kernel_us + wake_us
            events.append(
                op("cudaStreamSynchronize", t + 5.0, sync_end - t - 5.0, cat="cuda_runtime")
            )
            corr += 1
            t = sync_end
        events.append(op(f"ProfilerStep#{n}", start, t - start, cat="user_annotation"))
    return write_trace(path, events)


def test_a_sync_after_every_tiny_kernel_is_sync_bound(tmp_path):
    # per iteration: 5 us dispatch, 2 us before the kernel starts and 8 us of wake-up with
    # every stream idle inside the wait (10 us of sync stall), 3 us of device
    report = kinetoscope.explain(_sync_loop(tmp_path / "item.json", kernel_us=3.0))
    account = report.verdict.account
    assert account["sync_stall"] == pytest.approx(10 / 18, abs=1e-3)
    assert report.verdict.regime == "sync-bound"


def test_a_sync_waiting_on_a_busy_device_is_the_devices_time(tmp_path):
    # the same loop with 500 us kernels: the host blocks 510 us an iteration, but only 10
    # of them with the device idle: that wait is the device's time, never sync-bound
    report = kinetoscope.explain(_sync_loop(tmp_path / "busy.json", kernel_us=500.0))
    account = report.verdict.account
    assert account["device"] == pytest.approx(500 / 515, abs=1e-3)
    assert account["sync_stall"] < 0.03
    assert report.verdict.regime == "compute-bound"
    (sync,) = [f for f in report.findings if f.id == "host-sync"]
    # a sync saves at most its stall: 10 us an iteration, not the 510 us it blocked
    assert sync.measured["stall_us"] == pytest.approx(3 * 20 * 10.0, rel=1e-6)
    assert sync.measured["blocked_us"] == pytest.approx(3 * 20 * 510.0, rel=1e-6)


def test_each_piece_of_the_path_names_what_held_it():
    trace = kinetoscope.load(corpus(SGLANG))
    top = critical_path(trace).parts(trace, 3)
    assert (top[0].cls, top[0].name) == ("external", "hipMemcpyWithStream")
    assert top[0].us == pytest.approx(463_020, rel=1e-3)
    trace = kinetoscope.load(corpus(ALEXNET))
    top = critical_path(trace).parts(trace, 1)
    assert (top[0].cls, top[0].name) == ("one_time", "context start-up")
    assert top[0].first.index >= 0 or top[0].first.name == "context start-up"


def test_every_class_has_its_words():
    from kinetoscope.analysis.account.account import CPU_WORDS, WORDS

    assert set(WORDS) == set(CLASSES) == set(CPU_WORDS)


def _steps(path, first_number: int, durations: list[float]):
    """Steps of one aten::mm filling 90% of each, numbered from `first_number`."""
    events, t = [], 0.0
    for k, dur in enumerate(durations):
        events.append(op(f"ProfilerStep#{first_number + k}", t, dur, cat="user_annotation"))
        events.append(op("aten::mm", t + 0.05 * dur, 0.9 * dur))
        t += dur
    return write_trace(path, events)


def test_a_cold_first_step_is_one_time_work(tmp_path):
    # recorded from the loop's first iteration: step 0 takes 20 ms, the next ones 6-7 ms
    cold = _steps(tmp_path / "cold.json", 0, [20_000, 6_000, 7_000, 6_500, 6_000, 6_200])
    account = window_account(kinetoscope.load(cold))
    # the math inside it is the (CPU's) device's time by precedence; the rest is one-time
    assert account.causes["one_time"]["cold first step"] == pytest.approx(0.1 * 20_000)
    # the same first step after 5 iterations ran: no first call is left in it
    warm = _steps(tmp_path / "warm.json", 5, [20_000, 6_000, 7_000, 6_500, 6_000, 6_200])
    assert window_account(kinetoscope.load(warm)).us("one_time") == 0
    # a later step as slow as the first: the slowness recurs, it is no cold start
    again = _steps(tmp_path / "again.json", 0, [20_000, 6_000, 21_000, 6_500, 6_000, 6_200])
    assert window_account(kinetoscope.load(again)).us("one_time") == 0
