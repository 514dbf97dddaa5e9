"""The parts of `kinetoscope tune` that need no subprocess: statistics, knob choice, the
knob API, the step clock, the folder claim. Inputs are built to a known answer."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

from kinetoscope import knob
from kinetoscope.errors import UsageError
from kinetoscope.files.outputs import claim_folder
from kinetoscope.tune.clock import StepClock
from kinetoscope.tune.decide import judge, speed_up, spread
from kinetoscope.tune.knobs import Facts, choose, literal, parse_knob, workload_value

from ..capture_helpers import SRC

# ---- statistics ----------------------------------------------------------------------


def test_clear_gain_beats_noise():
    rng = np.random.default_rng(1)
    base = list(100 + rng.normal(0, 3, 10))
    fast = list(150 + rng.normal(0, 3, 10))
    s = speed_up(base, fast)
    assert s.low > 1.0 and s.beats_noise and not s.worse
    assert s.low < s.ratio < s.high
    assert s.ratio == pytest.approx(np.median(fast) / np.median(base))


def test_same_distribution_is_within_noise():
    """Two samples of one distribution: the interval must hold 1.0 (seeded draws)."""
    rng = np.random.default_rng(7)
    a, b = list(100 + rng.normal(0, 10, 10)), list(100 + rng.normal(0, 10, 10))
    s = speed_up(a, b)
    assert s.low <= 1.0 <= s.high and not s.beats_noise


def test_small_gain_in_large_noise_is_rejected_and_in_small_noise_accepted():
    """The same 5% gain: accepted only when the block-to-block spread is small."""
    rng = np.random.default_rng(3)
    noise = rng.normal(0, 1, 10)
    quiet = speed_up(list(100 + 0.5 * noise), list(105 + 0.5 * noise[::-1]))
    loud = speed_up(list(100 + 20 * noise), list(105 + 20 * noise[::-1]))
    assert quiet.beats_noise and not loud.beats_noise


def test_too_few_blocks_give_no_interval():
    s = speed_up([1.0, 1.1], [2.0, 2.1])
    assert s.low is None and not s.beats_noise


def test_spread_quartiles():
    s = spread([1, 2, 3, 4, 5])
    assert (s.median, s.q1, s.q3, s.iqr, s.n) == (3, 2, 4, 2, 5)


# ---- knob choice from the verdict ----------------------------------------------------

DATALOADER = {"batch": 32, "num_workers": 0, "pin_memory": False, "prefetch_factor": 2,
              "compile": None, "dtype": "fp32", "tf32": False}  # fmt: skip


def _facts(regime, gpu=False, backend="cpu", cpus=8, **kw):
    shares = {"data_share": 0.7, "sync_share": 0.5, "dispatch_share": 0.2, "other_share": 0.1}
    return Facts(regime, shares, kw.pop("ratio", 0.1), gpu, backend, cpus, **kw)


def _names(plans):
    return {p.name: p.values for p in plans}


def test_data_bound_cpu_tries_workers_up_to_the_cores_not_pinning():
    plans, skipped = choose(_facts("data-bound", cpus=4), DATALOADER)
    names = _names(plans)
    assert names["num_workers"] == (1, 2, 4)
    assert "pin_memory" not in names and "compile" not in names and "batch" not in names
    assert next(p for p in plans if p.name == "prefetch_factor").on_top
    assert {"pin_memory", "persistent_workers"} <= {k for k, _ in skipped}
    assert "data wait 70%" in plans[0].why


def test_data_bound_gpu_also_tries_pinning():
    names = _names(choose(_facts("data-bound", gpu=True, backend="cuda"), DATALOADER)[0])
    assert names["pin_memory"] == (True,)


def test_overhead_bound_tries_batch_and_compile_modes_by_backend():
    cuda = _names(choose(_facts("overhead-bound", True, "cuda"), DATALOADER)[0])
    rocm = _names(choose(_facts("overhead-bound", True, "rocm"), DATALOADER)[0])
    assert cuda["batch"] == (64, 128)
    assert cuda["compile"] == ("default", "reduce-overhead")
    assert rocm["compile"] == ("default",)  # CUDA graphs through reduce-overhead: NVIDIA only
    assert "num_workers" not in cuda


def test_compute_bound_gpu_fp32_tries_bf16_and_tf32_cpu_tries_nothing():
    gpu = _names(choose(_facts("compute-bound", True, "cuda", ratio=0.95), DATALOADER)[0])
    assert gpu == {"dtype": ("bf16",), "tf32": (True,)}
    plans, skipped = choose(_facts("compute-bound"), DATALOADER)
    assert plans == [] and ("dtype" in {k for k, _ in skipped})


def test_sync_bound_has_no_knob():
    plans, skipped = choose(_facts("sync-bound"), DATALOADER)
    assert plans == [] and "sync wait 50%" in skipped[0][1]


def test_memory_headroom_batches_stay_under_the_limit():
    gib = 1 << 30
    roomy = _facts("compute-bound", True, "cuda", peak_memory=10 * gib, device_memory=80 * gib)
    assert _names(choose(roomy, {**DATALOADER, "dtype": "bf16"})[0])["batch"] == (64, 128)
    tight = _facts("compute-bound", True, "cuda", peak_memory=30 * gib, device_memory=80 * gib)
    assert _names(choose(tight, {**DATALOADER, "dtype": "bf16"})[0])["batch"] == (64,)
    full = _facts("compute-bound", True, "cuda", peak_memory=50 * gib, device_memory=80 * gib)
    assert "batch" not in _names(choose(full, {**DATALOADER, "dtype": "bf16"})[0])


def test_knob_parsing():
    assert parse_knob("batch_size=16, 32,64") == ("batch_size", ["16", "32", "64"])
    with pytest.raises(UsageError):
        parse_knob("batch_size")
    assert [literal(v) for v in ("3", "2.5", "true", "x")] == [3, 2.5, True, "x"]
    assert workload_value("num_workers", "2", DATALOADER) == 2
    assert workload_value("pin_memory", "true", DATALOADER) is True
    assert workload_value("compile", "off", DATALOADER) is None
    with pytest.raises(UsageError, match="not a knob"):
        workload_value("nope", "1", DATALOADER)


# ---- the knob API ----------------------------------------------------------------------


def test_knob_reads_the_environment_typed(monkeypatch):
    monkeypatch.setenv("KINETOSCOPE_KNOB_BATCH_SIZE", "64")
    monkeypatch.setenv("KINETOSCOPE_KNOB_PIN", "true")
    monkeypatch.setenv("KINETOSCOPE_KNOB_LR", "0.5")
    assert knob("batch_size", 32) == 64
    assert knob("pin", False) is True
    assert knob("lr", 0.1) == 0.5
    assert knob("untouched", "adam") == "adam"


def test_knob_imports_no_torch():
    code = "import sys, kinetoscope; kinetoscope.knob('a', 1); print('torch' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         env={"PYTHONPATH": str(SRC)}, check=True)  # fmt: skip
    assert out.stdout.strip() == "False"


# ---- the step clock --------------------------------------------------------------------


class _FakeProfiler:
    def __init__(self, log):
        self.log = log

    def __enter__(self):
        self.log.append("start")

    def step(self):
        self.log.append("step")

    def __exit__(self, *exc):
        self.log.append("stop" if exc[0] is None else "abort")


def test_clock_phases():
    log, syncs = [], []
    clock = StepClock(2, 3, 4, lambda: syncs.append(1), lambda: _FakeProfiler(log), 4, 0.0)
    n = 0
    while not clock.done:
        clock.on_step()
        n += 1
    assert n == 2 + 3 * 4 + 4
    assert len(clock.marks) == 4 and len(clock.block_seconds()) == 3 and len(syncs) == 4
    assert clock.sizes == [4, 4, 4]
    assert log == ["start", "step", "step", "step", "step", "stop"]


# ---- the session folder ----------------------------------------------------------------


def test_claim_folder_numbers_and_force(tmp_path):
    first = claim_folder(tmp_path / "tune" / "x")
    second = claim_folder(tmp_path / "tune" / "x")
    assert (first.name, second.name) == ("x", "x_2")
    assert claim_folder(tmp_path / "tune" / "x", force=True) == first


# ---- blocks last long enough to share the machine's load in proportion ---------------


def test_clock_blocks_of_microsecond_steps_last_the_shortest_block(monkeypatch):
    """20 us steps: a block holds steps until it lasts 100 ms (5000 steps), not 5 steps
    (100 us, shorter than one scheduler slice: all or nothing of a preemption)."""
    now = [0.0]
    monkeypatch.setattr("kinetoscope.tune.clock.time.perf_counter", lambda: now[0])
    clock = StepClock(5, 10, 5, lambda: None, None, 0, 0.1)
    while not clock.done:
        now[0] += 20e-6
        clock.on_step()
    assert len(clock.sizes) == 10 and all(n >= 5000 for n in clock.sizes)
    assert clock.block_seconds() == pytest.approx([20e-6] * 10)


def test_clock_never_times_the_first_step():
    """torch.compile compiles in its first call: with --warmup 0 that call stays untimed."""
    clock = StepClock(0, 3, 1, lambda: None, None, 0, 0.0)
    clock.on_step()
    assert len(clock.marks) == 1 and clock.sizes == []  # step 1 ended warm-up, untimed


# ---- the judgement: a trial between two runs of its reference ---------------------------


def _samples(centre: float, seed: int, n: int = 10, rel: float = 0.03) -> list[float]:
    return list(centre * (1 + rel * np.random.default_rng(seed).normal(size=n)))


def test_a_150x_speedup_from_a_drifted_baseline_is_a_fault_not_accepted():
    """The baseline's run before the trial ran while the machine was busy (400 samples/s);
    its run after, at its real speed (60,000/s); the compiled trial at 24,000/s. Against
    the run before the trial is "150x" faster; against the run after, 0.4x."""
    before, trial, after = _samples(160, 1), _samples(24_000, 2), _samples(60_000, 3)
    j = judge(before, trial, after)
    assert j.before.ratio == pytest.approx(150, rel=0.05) and j.before.beats_noise
    assert j.after.worse and j.drifted
    assert j.accepted is False
    assert j.fault.startswith("measurement fault") and "0.40x the run after" in j.fault


def test_a_real_gain_holds_against_both_runs():
    j = judge(_samples(100, 1), _samples(150, 2), _samples(101, 3))
    assert j.accepted is True and j.fault is None and not j.drifted
    assert j.speed.ratio == pytest.approx(1.5, rel=0.03)


def test_a_gain_larger_than_the_drift_still_stands():
    """The reference moved 10% between its runs, the trial is 2x: both agree, accepted."""
    j = judge(_samples(100, 1), _samples(200, 2), _samples(110, 3))
    assert j.drifted and j.accepted is True and j.fault is None


def test_a_small_gain_inside_the_drift_is_not_accepted():
    """The trial beats the run before (100) but not the run after (110): drift explains it."""
    j = judge(_samples(100, 1, rel=0.01), _samples(106, 2, rel=0.01), _samples(110, 3, rel=0.01))
    assert j.before.beats_noise and not j.after.beats_noise
    assert j.accepted is False and j.fault is not None


def test_without_a_run_after_there_is_no_judgement():
    j = judge(_samples(100, 1), _samples(300, 2), None)
    assert j.accepted is None and "not judged" in j.fault


# ---- the session interleaves: baseline, trial, baseline, trial, baseline ---------------


def _fake_session(
    tmp_path, monkeypatch, seconds_per_step: list[float], queued=0.0, knobs=None, params=None
):
    """A workload session whose runs take the given seconds per step, in run order, their
    threads waiting `queued` of the timed time for a CPU; each run reports `params` (the
    workload's settings, as a real run reads them back)."""
    from kinetoscope.tune import session as session_mod
    from kinetoscope.tune.session import Budget, Session, run_session
    from kinetoscope.tune.trials import Target, Timing

    order = iter(seconds_per_step)

    def fake_run(target, trial, timing, folder, timeout, force=False, profile=True):
        step = next(order)
        trial.block_seconds = _samples(step, trial.index, n=8, rel=0.02)
        trial.regime = "host-only" if profile else None
        trial.params = params or {"size": 64}
        trial.run_queue_share = queued
        return trial

    monkeypatch.setattr(session_mod, "run_trial", fake_run)
    s = Session(Target("workload", "matmul_add", {}), Timing(), tmp_path)
    knobs = knobs or [("compile", ["default", "max-autotune"])]
    return run_session(s, knobs, Budget(), timeout=10)


def test_session_interleaves_and_rejects_a_drifted_150x(tmp_path, monkeypatch):
    # baseline 2.5 ms/step (the machine was busy), compile 17 us, baseline 6.8 us (quiet),
    # max-autotune 6.8 us, baseline 6.8 us
    s = _fake_session(tmp_path, monkeypatch, [2.5e-3, 17e-6, 6.8e-6, 6.8e-6, 6.8e-6])
    stages = [t.stage for t in s.trials]
    assert stages == ["baseline", "single", "baseline again", "single", "baseline again"]
    compiled = s.trial("compile=default")
    assert compiled.bracket == (0, 2)
    assert compiled.judgement.before.ratio > 100  # the "150x" of the issue
    assert compiled.accepted is False and compiled.judgement.fault
    assert s.best is None
    assert any(n.startswith("compile=default: measurement fault") for n in s.notes)


def test_knob_values_the_baseline_already_runs_are_skipped_and_said(tmp_path, monkeypatch):
    """Seen on an H100: `tune matmul_add --knob dtype=bf16 --knob tf32=true` ran both trials
    on a baseline that was already bf16 (the workload's GPU default), two 1.00x "results".
    Now only dtype=fp16 runs; dtype=bf16 (the baseline's own) and tf32 (fp32 matmuls only)
    are skipped with their reasons. On an fp32 baseline both run."""
    knobs = [("dtype", ["bf16", "fp16"]), ("tf32", ["true"])]
    bf16 = {"size": 64, "dtype": "bf16"}
    s = _fake_session(tmp_path, monkeypatch, [20e-6] * 3, knobs=knobs, params=bf16)
    assert [t.label for t in s.trials if t.stage == "single"] == ["dtype=fp16"]
    assert dict(s.skipped) == {
        "dtype=bf16": "the baseline already runs dtype=bf16",
        "tf32=true": "the baseline runs bf16: TF32 changes only fp32 matmuls",
    }
    fp32 = {"size": 64, "dtype": "fp32"}
    s = _fake_session(tmp_path / "fp32", monkeypatch, [20e-6] * 7, knobs=knobs, params=fp32)
    singles = [t.label for t in s.trials if t.stage == "single"]
    assert singles == ["dtype=bf16", "dtype=fp16", "tf32=true"] and not s.skipped


def test_session_accepts_a_steady_gain(tmp_path, monkeypatch):
    s = _fake_session(tmp_path, monkeypatch, [20e-6, 10e-6, 20e-6, 21e-6, 20e-6])
    assert s.trial("compile=default").accepted is True
    assert s.trial("compile=max-autotune").accepted is False
    assert s.best == "compile=default"


def test_a_busy_machine_is_said(tmp_path, monkeypatch):
    """Threads waiting for a CPU 40% of the timed time (schedstat): other processes ran."""
    s = _fake_session(tmp_path, monkeypatch, [20e-6] * 5, queued=0.4)
    assert any(n.startswith("the machine was busy: in 5 of 5 runs") for n in s.notes)
    quiet = _fake_session(tmp_path / "q", monkeypatch, [20e-6] * 5, queued=0.01)
    assert not any("machine was busy" in n for n in quiet.notes)


def test_clock_measures_the_run_queue(monkeypatch):
    """The share is the run-queue seconds over the timed wall seconds."""
    now, queue = [0.0], [0.0]
    monkeypatch.setattr("kinetoscope.tune.clock.time.perf_counter", lambda: now[0])
    monkeypatch.setattr("kinetoscope.tune.clock.run_queue_seconds", lambda: queue[0])
    clock = StepClock(1, 4, 1, lambda: None, None, 0, 0.0)
    while not clock.done:
        now[0] += 1.0
        queue[0] += 0.25
        clock.on_step()
    assert clock.run_queue_share() == pytest.approx(0.25)


def test_a_gain_the_load_could_make_is_a_fault(tmp_path, monkeypatch):
    """A 2x "gain" (20 -> 10 us per step) where every run's threads waited for a CPU 150% of
    its timed time: the baselines waited 30 us per step, the trial 15 us, 15 us more, as much
    as the 10 us the trial saves. The load alone could make it: a fault, said, not accepted."""
    s = _fake_session(tmp_path, monkeypatch, [20e-6, 10e-6, 20e-6, 21e-6, 20e-6], queued=1.5)
    compiled = s.trial("compile=default")
    assert compiled.judgement.before.beats_noise and compiled.judgement.after.beats_noise
    assert compiled.accepted is False
    assert compiled.judgement.fault.startswith("measurement fault: the machine was busy")
    assert s.best is None


def test_a_gain_larger_than_the_load_stands(tmp_path, monkeypatch):
    """A 7x gain (22 -> 3.1 ms per step, a shorter sleep) on a busy machine: the baselines
    waited 2.2 ms per step (10%), the trial 1.55 ms (50%): 0.65 ms more, far under the 19 ms
    saved. Accepted."""
    from kinetoscope.tune.decide import Waited, load_fault

    ref, trial = Waited("baseline", 22e-3, 0.10), Waited("sleep_ms=2", 3.1e-3, 0.5)
    assert load_fault([ref], trial) is None
    assert load_fault([Waited("baseline", 22e-3, 1.0)], trial).startswith("measurement fault")
    assert load_fault([ref], Waited("x", 3.1e-3, None)) is None  # unknown: not a fault


def test_the_count_of_trials_is_what_the_budget_leaves(tmp_path, monkeypatch):
    """It read 'trial 1 of 1' for the baseline, then '2 of 9 ... about 424 s left' under
    --time 300: the plan's count, whatever the budget. Each run takes 100 s of a clock
    turned by hand; --time 300 leaves room for the baseline and one judged trial."""
    from kinetoscope.tune import session as session_mod
    from kinetoscope.tune.session import Budget, Session, run_session
    from kinetoscope.tune.trials import Target, Timing

    clock = [0.0]
    monkeypatch.setattr(session_mod, "_now", lambda: clock[0])

    def fake_run(target, trial, timing, folder, timeout, force=False, profile=True):
        clock[0] += 100
        trial.wall_s = 100.0
        trial.block_seconds = _samples(1e-3, trial.index, n=8, rel=0.02)
        trial.regime = "host-only" if profile else None
        trial.params = {"size": 64}
        return trial

    monkeypatch.setattr(session_mod, "run_trial", fake_run)
    said: list[tuple[str | None, int | None]] = []
    s = Session(Target("workload", "matmul_add", {}), Timing(), tmp_path)
    knobs = [("compile", ["default", "max-autotune"])]  # the plan: 1 + 2 x 2 + 2 runs
    run_session(s, knobs, Budget(seconds=300), timeout=10, progress=lambda *a: said.append(a))
    assert len(s.trials) == 3
    assert said == [
        ("baseline", None),  # how many follow depends on its verdict: no count yet
        (None, None),
        ("compile=default", 3),  # 200 s left at 100 s a run: 2 more, not the plan's 6
        (None, 3),
        ("baseline again", 3),
        (None, 3),
    ]
    said.clear()
    run_session(Session(Target("workload", "matmul_add", {}), Timing(), tmp_path), knobs,
                Budget(trials=1), timeout=10, progress=lambda *a: said.append(a))  # fmt: skip
    assert {planned for _, planned in said[2:]} == {3}  # one judged trial and its reference
