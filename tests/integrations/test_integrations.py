"""The integrations, with the real libraries on CPU: `trace_handler(explain=True,
expect=...)` in a plain loop, the Hugging Face `Trainer` callback (a tiny randomly
initialised GPT-2, no download) and the Lightning callback (a tiny module)."""

from __future__ import annotations

import warnings

import pytest

torch = pytest.importorskip("torch")

import kinetoscope  # noqa: E402
from kinetoscope.integrations.cycle import ExpectationFailed, ExpectationWarning  # noqa: E402


def _loop(handler, steps: int, schedule) -> None:
    x = torch.randn(64, 64)
    with torch.profiler.profile(schedule=schedule, on_trace_ready=handler) as prof:
        for _ in range(steps):
            x = torch.tanh(x @ x)
            prof.step()


def test_trace_handler_prints_one_verdict_line_per_cycle(tmp_path):
    lines: list[str] = []
    handler = kinetoscope.trace_handler(tmp_path, worker_name="w", echo=lines.append)
    _loop(handler, 6, torch.profiler.schedule(wait=0, warmup=1, active=2, repeat=2))
    traces = sorted(tmp_path.glob("*.pt.trace.json"))
    assert len(traces) == 2
    assert len(lines) == 2
    for cycle, line in enumerate(lines):
        assert line.startswith(f"kinetoscope: cycle {cycle + 1}: ")
        # the regime explain gives for the same file, in capitals, said once
        regime = kinetoscope.explain(handler.written[cycle].trace).verdict.regime
        assert (
            f": {regime.upper()}: " in line and f"{regime}:" not in line.lower().split(": ", 3)[3]
        )
        assert str(handler.written[cycle].trace) in line


def test_trace_handler_without_explain_reads_nothing(tmp_path):
    lines: list[str] = []
    handler = kinetoscope.trace_handler(tmp_path, explain=False, echo=lines.append)
    _loop(handler, 3, torch.profiler.schedule(wait=0, warmup=1, active=2, repeat=1))
    assert len(handler.written) == 1 and lines == []


def test_a_failed_expectation_warns_and_the_run_goes_on(tmp_path):
    lines: list[str] = []
    handler = kinetoscope.trace_handler(
        tmp_path, expect=["launches_per_step <= 50", "step_time_ms <= 0.000001"], echo=lines.append
    )
    with pytest.warns(ExpectationWarning, match=r"1 of 2 expectation\(s\) failed: step_time_ms"):
        _loop(handler, 6, torch.profiler.schedule(wait=0, warmup=1, active=2, repeat=2))
    assert len(handler.written) == 2  # both cycles written: a warning does not stop the run
    assert sum(line.startswith("kinetoscope: FAIL  step_time_ms") for line in lines) == 2


def test_a_passing_expectation_is_silent(tmp_path):
    handler = kinetoscope.trace_handler(tmp_path, expect="step_time_ms <= 100000", echo=print)
    with warnings.catch_warnings():
        warnings.simplefilter("error", ExpectationWarning)
        _loop(handler, 3, torch.profiler.schedule(wait=0, warmup=1, active=2, repeat=1))


def test_on_fail_raise_stops_the_run(tmp_path):
    handler = kinetoscope.trace_handler(
        tmp_path, expect=["step_time_ms <= 0.000001"], on_fail="raise", echo=lambda _: None
    )
    with pytest.raises(ExpectationFailed, match="step_time_ms"):
        _loop(handler, 6, torch.profiler.schedule(wait=0, warmup=1, active=2, repeat=2))
    assert len(handler.written) == 1  # the guard stopped the run in the step after the cycle


def test_a_bad_expression_fails_before_any_profiling(tmp_path):
    with pytest.raises(kinetoscope.UsageError):
        kinetoscope.trace_handler(tmp_path, expect=["step_time_ms <="])
    with pytest.raises(ValueError, match="on_fail"):
        kinetoscope.trace_handler(tmp_path, on_fail="ignore")


def test_transformers_trainer_callback_tiny_gpt2(tmp_path, capsys):
    transformers = pytest.importorskip("transformers")
    pytest.importorskip("accelerate")
    from kinetoscope.integrations.transformers import KinetoscopeCallback

    torch.manual_seed(0)
    config = transformers.GPT2Config(n_layer=1, n_embd=32, n_head=2, vocab_size=100, n_positions=16)
    model = transformers.GPT2LMHeadModel(config)
    ids = torch.randint(0, 100, (40, 16))
    data = [{"input_ids": row, "labels": row} for row in ids]
    args = transformers.TrainingArguments(
        output_dir=str(tmp_path / "hf"),
        per_device_train_batch_size=4,
        max_steps=10,
        report_to=[],
        logging_steps=100,
        save_strategy="no",
        use_cpu=True,
        disable_tqdm=True,
    )
    trainer = transformers.Trainer(model=model, args=args, train_dataset=data)
    callback = KinetoscopeCallback.attach(trainer, out=tmp_path / "traces", repeat=2)
    trainer.train()
    traces = sorted((tmp_path / "traces").glob("*.pt.trace.json"))
    assert len(traces) == 2  # wait 1 + warm-up 1 + active 3 = 5 optimizer steps a cycle
    assert len(callback.results) == 2
    printed = [ln for ln in capsys.readouterr().out.splitlines() if ln.startswith("kinetoscope:")]
    assert [ln.split(":")[1].strip() for ln in printed] == ["cycle 1", "cycle 2"]
    for trace in traces:  # three optimizer steps per trace, as the schedule says
        assert len(kinetoscope.load(trace).steps) == 3
    # logged through Trainer.log: the cycle's numbers are in the run's log history
    logged = [h for h in trainer.state.log_history if "kinetoscope/step_time_us_per_step" in h]
    assert len(logged) == 2
    metrics = callback.results[0].report.metrics
    assert logged[0]["kinetoscope/step_time_us_per_step"] == pytest.approx(metrics["step_time_us"])
    assert logged[0]["kinetoscope/host_time_us_per_step"] == pytest.approx(
        metrics["host_time_per_step_us"]
    )
    assert not [k for k in logged[0] if k.endswith(("/step_time_us", "/host_time_us"))]


def test_transformers_callback_leaves_other_ranks_alone(tmp_path):
    pytest.importorskip("transformers")
    from kinetoscope.integrations.transformers import KinetoscopeCallback

    callback = KinetoscopeCallback(out=tmp_path / "traces", ranks=(0,))

    class Args:
        process_index = 1

    callback.on_train_begin(Args(), None, None)
    assert not callback.steps.active
    assert callback.steps.step() == [] and callback.steps.stop() == []
    assert not (tmp_path / "traces").exists()


def test_lightning_callback_tiny_module(tmp_path, capsys):
    L = pytest.importorskip("lightning")
    from kinetoscope.integrations.lightning import KinetoscopeCallback

    class Tiny(L.LightningModule):
        def __init__(self):
            super().__init__()
            self.layer = torch.nn.Linear(16, 4)

        def training_step(self, batch, _index):
            x, y = batch
            return torch.nn.functional.mse_loss(self.layer(x), y)

        def configure_optimizers(self):
            return torch.optim.SGD(self.parameters(), lr=0.01)

    data = torch.utils.data.TensorDataset(torch.randn(48, 16), torch.randn(48, 4))
    loader = torch.utils.data.DataLoader(data, batch_size=4)
    logged: list[dict] = []

    class Recorder(L.pytorch.loggers.logger.Logger):
        name, version = "recorder", 0

        @property
        def experiment(self):
            return None

        def log_hyperparams(self, *args, **kwargs):
            pass

        def log_metrics(self, metrics, step=None):
            logged.append(dict(metrics))

    callback = KinetoscopeCallback(out=tmp_path / "traces", wait=1, warmup=1, active=2, repeat=2)
    trainer = L.Trainer(
        max_steps=12,
        accelerator="cpu",
        logger=Recorder(),
        callbacks=[callback],
        enable_checkpointing=False,
        enable_progress_bar=False,
        enable_model_summary=False,
        # under the default of 50 (more than the 12 batches) Lightning warns with its own
        # class; pytest-xdist's controller imports that class's module to show it, which
        # is all of Lightning and torch (8 s of CPU) in a process that needs neither
        log_every_n_steps=1,
    )
    trainer.fit(Tiny(), loader)
    traces = sorted((tmp_path / "traces").glob("*.pt.trace.json"))
    assert len(traces) == 2
    assert len(callback.results) == 2
    out = capsys.readouterr().out
    assert out.count("kinetoscope: cycle ") == 2
    assert sum("kinetoscope/step_time_us_per_step" in m for m in logged) == 2


def test_the_callbacks_filter_kinetos_usdt_lines(tmp_path):
    """Kineto writes `USDT:... profiler_start` / `profiler_stop` to fd 2 each cycle; the
    CLI filtered them, the callbacks (their shared `ProfiledSteps`) did not."""
    import os
    import subprocess
    import sys
    from pathlib import Path

    code = (
        "import sys, torch\n"
        "from kinetoscope.integrations.stepper import ProfiledSteps\n"
        "steps = ProfiledSteps(sys.argv[1], (0, 1, 2, 1), explain=False)\n"
        "steps.start(0)\n"
        "for _ in range(4):\n"
        "    torch.randn(8, 8) @ torch.randn(8, 8)\n"
        "    steps.step()\n"
        "steps.stop()\n"
        "print('real stderr', file=sys.stderr)\n"
    )
    src = str(Path(__file__).resolve().parents[2] / "src")
    env = {**os.environ, "PYTHONPATH": src}
    done = subprocess.run(
        [sys.executable, "-c", code, str(tmp_path)], capture_output=True, text=True, env=env,
        timeout=300,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert list(tmp_path.glob("*.pt.trace.json"))
    assert "USDT:" not in done.stderr and "real stderr" in done.stderr
