"""The diff explains: environment first, the step change split into parts judged over
the two sets of steps, and device work that appeared or vanished by type.

Expectations come from reading the traces (raw JSON here, not the tool): each
ResNet-50 run holds six `ProfilerStep#5..10`; with num_workers=0 each step
spends 62.6-73.4 ms in `enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__`
(median 69.8 ms of a 176 ms median step), with num_workers=4 0.08-4.3 ms
(median 1.31 ms of 127 ms). So the 50 ms gain is the data wait. Four of the
six workers=4 steps (116-127 ms) are faster than every workers=0 step
(164-181 ms); two (164 and 182 ms) are not, which is why a rule holding the
median difference against the steps' spread (46 ms) misses nothing here but a
rule asking whether the sets overlap at all would call it noise.
"""

from __future__ import annotations

import gzip
import json

import numpy as np
import pytest

from kinetoscope.compare.decompose import spread
from kinetoscope.compare.diff import diff_runs
from kinetoscope.compare.runs import load_run
from kinetoscope.report.diff_render import RENDERERS

from ..conftest import corpus, kernel, launch, op, write_trace

WORKERS0 = "gpu/resnet50_dataloader_workers0.pt.trace.json.gz"
WORKERS4 = "gpu/resnet50_dataloader_workers4.pt.trace.json.gz"
QWEN_H100 = "gpu/tracelens_h100__Qwen_Qwen1.5-0.5B-Chat__1016005.json.gz"
QWEN_MI300 = "gpu/tracelens_mi300__Qwen_Qwen1.5-0.5B-Chat__1016005.json.gz"


def _diff(a, b):
    return diff_runs(load_run(a), load_run(b))


def _parts(d):
    return {c.words: c for c in d.decomposition}


def _raw_steps_and_data_wait(path):
    """(step durations, DataLoader __next__ time inside each step), read from the JSON."""
    with gzip.open(path) as f:
        events = json.load(f)["traceEvents"]
    steps = [e for e in events if str(e.get("name", "")).startswith("ProfilerStep#")]
    nexts = [
        e
        for e in events
        if "DataLoader" in str(e.get("name", "")) and e["name"].endswith("__next__")
    ]
    waits = []
    for s in steps:
        lo, hi = s["ts"], s["ts"] + s["dur"]
        waits.append(sum(max(0, min(hi, n["ts"] + n["dur"]) - max(lo, n["ts"])) for n in nexts))
    return [s["dur"] for s in steps], waits


@pytest.fixture(scope="module")
def resnet_pair():
    return _diff(corpus(WORKERS0), corpus(WORKERS4))


def test_resnet_workers_gain_is_data_wait(resnet_pair):
    d = resnet_pair
    durs0, waits0 = _raw_steps_and_data_wait(corpus(WORKERS0))
    durs4, waits4 = _raw_steps_and_data_wait(corpus(WORKERS4))
    assert len(durs0) == len(durs4) == 6
    assert np.median(waits0) == pytest.approx(69810.5) and np.median(waits4) == pytest.approx(
        1310.5
    )
    parts = _parts(d)
    data = parts["data wait"]
    # the parts are the median step's: with six steps, the mean of the 3rd and 4th by
    # duration (126.3 and 126.8 ms with workers=4, data wait 1.25 and 0.09 ms)
    for waits, durs, figure in ((waits0, durs0, data.a_us), (waits4, durs4, data.b_us)):
        middle = np.argsort(durs, kind="stable")[2:4]
        assert figure == pytest.approx(np.mean(np.asarray(waits)[middle]), rel=1e-3)
    assert data.b_us == pytest.approx(669, abs=1)
    # the spread: the larger of the runs' max(IQR, p90 - median); workers=0 varies most
    assert data.noise_us == pytest.approx(max(spread(waits0), spread(waits4)), rel=1e-2)
    assert data.status == "gain" and data.high_us < 0
    step = parts["step time"]
    assert step.a_us == pytest.approx(np.median(durs0)) and step.b_us == pytest.approx(
        np.median(durs4)
    )
    assert step.status == "gain" and step.delta_us == pytest.approx(-49725, abs=1)
    assert step.low_us < step.delta_us < step.high_us < 0
    # the host parts of the median step add up to it: no part moves by more than a step
    host = ("data wait", "sync wait", "dispatch + launch", "Python/other")
    for side in ("a_us", "b_us"):
        total = sum(getattr(parts[w], side) for w in host)
        assert total == pytest.approx(getattr(step, side), rel=1e-6)
    # dispatch: every workers=4 step (98-156 ms) dispatches longer than every workers=0
    # step (89-94 ms; worker processes share the cores): a real loss, not noise
    assert parts["dispatch + launch"].status == "loss"
    assert parts["dispatch + launch"].low_us > 0
    # the same GPU and the same model: nothing in the environment differs
    assert not d.environment.differences and not d.environment.device_change
    assert d.conclusion.startswith("No difference in the recorded environment")
    assert "The gain is data wait: 69.8 ms -> 669 us per step." in d.conclusion
    assert "The step time moved -49.7 ms: a gain (95% interval" in d.conclusion


def test_resnet_types_count_vanished_conv_kernels(resnet_pair):
    d = resnet_pair
    types = {t.type: t for t in d.types}
    # gone kernels (explicit_convolve_sgemm and friends) are convolutions: 7 calls per step,
    # while cuDNN's other conv kernels rose from 288 to 301 calls per step (253 -> 274 before
    # issue 20 typed cuDNN's cask_cudnn::computeOffsetsKernel helpers, launched for implicit-GEMM
    # convolutions, as conv: 35 and 27 of them per step)
    gone = d.kernels.by_status("gone")
    assert sum(r.calls_a for r in gone) == pytest.approx(types["conv"].vanished)
    assert types["conv"].vanished == pytest.approx(7)
    assert (types["conv"].events_a, types["conv"].events_b) == (288, 301)
    assert types["gemm"].appeared == types["gemm"].vanished == 0
    assert "7 convolution kernels (288 -> 301 per step in all) vanished" in d.conclusion


def test_qwen_h100_vs_mi300_device_change_first():
    d = _diff(corpus(QWEN_H100), corpus(QWEN_MI300))
    env = d.environment
    assert env.device_change == "vendor"
    assert d.conclusion.startswith(
        "The device changed (another vendor's GPU): A ran on NVIDIA H100 80GB HBM3, "
        "B on AMD Instinct MI300X VF"
    )
    fields = {r.field: (r.a, r.b) for r in env.differences}
    # the top-level version keys of each file (CUDA 12.4 runtime on H100, HIP 6.4 on MI300X)
    assert fields["CUDA runtime"] == ("12040", "-")
    assert fields["HIP runtime"] == ("-", "60443483")
    # both recorded shapes, stacks, memory and FLOPs: no profiler setting differs
    assert not any(f.startswith("profiler ") for f in fields)
    # no like-for-like kernel matching, and nothing said to appear or vanish by type
    assert not d.kernels.comparable and not d.kernels.rows
    assert "By type, per step" not in d.conclusion
    # H100 ran 239 memsets, MI300X none: not called vanished (HIP may run them as kernels)
    memset = next(t for t in d.types if t.type == "memset")
    assert (memset.events_a, memset.events_b) == (239, 0)
    assert all(t.appeared == t.vanished == 0 for t in d.types)
    # one step each: no spread, so no change is called real
    step = _parts(d)["step time"]
    assert step.noise_us is None and step.status == "unmeasured"
    assert "no step-to-step spread" in d.conclusion


def test_compare_base_vs_test_step_unchanged():
    d = _diff(corpus("gpu/compare_base.json.gz"), corpus("gpu/compare_test.json.gz"))
    # ProfilerStep#1009 and #1010 last 100298 and 122149 us in both files
    assert _parts(d)["step time"].status == "none"
    assert "B takes about as long as A" in d.conclusion
    assert "The gain is" not in d.conclusion and "The loss is" not in d.conclusion
    assert "With 2 steps in a run no interval can be computed" in d.conclusion
    assert all(t.appeared == t.vanished == 0 for t in d.types)


def test_a_run_against_itself_is_all_zero(resnet_pair):
    path = corpus(WORKERS0)
    d = _diff(path, path)
    assert {c.status for c in d.decomposition} == {"none"}
    assert all(c.delta_us == 0 and c.noise_us is not None for c in d.decomposition)
    assert all(t.appeared == t.vanished == 0 for t in d.types)
    assert not d.environment.differences
    assert "Nothing changed: every part of the step is equal in both runs." in d.conclusion
    assert "By type" not in d.conclusion


def _gpu_run(tmp_path, name, device, copies):
    """Two steps of one GEMM each, plus `copies` DtoD copies per step, on `device`."""
    events = []
    corr = 0
    for step in range(2):
        t0 = step * 1000
        events.append(op(f"ProfilerStep#{step}", t0, 900, cat="user_annotation"))
        events.append(op("aten::mm", t0 + 10, 500))
        corr += 1
        events.append(launch(t0 + 20, 10, corr))
        events.append(kernel("ampere_sgemm_128x64_nn", t0 + 100, 40, corr))
        for c in range(copies):
            corr += 1
            events.append(launch(t0 + 40 + 10 * c, 5, corr, name="cudaMemcpyAsync"))
            copy = kernel("Memcpy DtoD (Device -> Device)", t0 + 200 + 20 * c, 10, corr)
            copy["cat"] = "gpu_memcpy"
            events.append(copy)
    props = [{"id": 0, "name": device, "computeMajor": 8, "computeMinor": 0, "numSms": 108}]
    return write_trace(tmp_path / name, events, deviceProperties=props)


def test_model_change_and_new_copies_by_type(tmp_path):
    a = _gpu_run(tmp_path, "a.json", "NVIDIA A100-SXM4-80GB", 0)
    b = _gpu_run(tmp_path, "b.json", "NVIDIA H100 80GB HBM3", 3)
    d = _diff(a, b)
    assert d.environment.device_change == "model"
    assert d.conclusion.startswith("The device changed (another GPU model)")
    assert "not like for like" in d.conclusion
    copies = next(t for t in d.types if t.type == "memcpy DtoD")
    assert (copies.events_a, copies.events_b, copies.appeared) == (0, 3, 3)
    assert "3 device-to-device copies (0 -> 3 per step in all) appeared" in d.conclusion


def test_same_device_same_settings_is_not_a_device_change(tmp_path):
    a = _gpu_run(tmp_path, "a.json", "NVIDIA A100-SXM4-80GB", 0)
    b = _gpu_run(tmp_path, "b.json", "NVIDIA A100-SXM4-80GB", 3)
    d = _diff(a, b)
    assert d.environment.device_change == "" and not d.environment.differences
    assert "not like for like" not in d.conclusion


def test_json_carries_the_structured_version(resnet_pair):
    data = json.loads(RENDERERS["json"](resnet_pair))
    parts = {c["words"]: c for c in data["decomposition"]}
    assert parts["data wait"]["status"] == "gain" and parts["data wait"]["noise_us"] > 0
    assert data["environment"]["differences"] == []
    conv = next(t for t in data["types"] if t["type"] == "conv")
    assert conv["vanished"] == pytest.approx(7)
    text = RENDERERS["text"](resnet_pair)
    assert "Where the step time goes" in text and "Device work by type" in text
