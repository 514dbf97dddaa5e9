"""`kinetoscope profile script.py -- ARGS`: a user's script profiled without editing it."""

from __future__ import annotations

import textwrap

import pytest

pytest.importorskip("torch")

import kinetoscope  # noqa: E402
from kinetoscope.capture.script import run_script  # noqa: E402
from kinetoscope.errors import UsageError  # noqa: E402

from ..capture_helpers import error_lines, profile_here, step_numbers  # noqa: E402

TRAIN = textwrap.dedent(
    """
    import argparse
    import torch
    from helpers import train_step

    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, required=True)
    args = parser.parse_args()
    model = torch.nn.Linear(4, 1)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    for _ in range(args.steps):
        train_step(model, optimizer)
    """
)

HELPERS = textwrap.dedent(
    """
    import torch

    def train_step(model, optimizer):
        with torch.profiler.record_function("user_step"):
            loss = model(torch.randn(8, 4)).pow(2).mean()
            optimizer.zero_grad()
            loss.backward()
        optimizer.step()

    def no_optimizer_step(x):
        return (x @ x).sum()
    """
)


@pytest.fixture
def project(tmp_path):
    (tmp_path / "train.py").write_text(TRAIN)
    (tmp_path / "helpers.py").write_text(HELPERS)
    return tmp_path


def test_optimizer_steps_drive_the_schedule(project):
    done = profile_here("train.py", "--out", "traces", "--", "--steps", "7", cwd=project)
    assert done.returncode == 0, done.stderr
    assert "7 steps (optimizer.step() calls)" in done.stdout
    [trace_path] = (project / "traces" / "train").glob("*.pt.trace.json")
    assert trace_path.with_name(trace_path.name.replace(".pt.trace.json", ".txt")).is_file()
    trace = kinetoscope.load(trace_path)
    assert step_numbers(trace) == [2, 3, 4]
    assert "user_step" in trace.names
    # each step ends after its optimizer.step() returned: every optimizer range nests in a step
    optimizer_ranges = [i for i in range(len(trace)) if trace.name(i) == "Optimizer.step#SGD.step"]
    assert len(optimizer_ranges) == 3
    for i in optimizer_ranges:
        assert any(s.start <= trace.ts[i] and trace.end[i] <= s.end for s in trace.steps)
    assert trace.meta.kinetoscope["args"] == ["--steps", "7"]
    assert trace.meta.kinetoscope["step_source"] == "optimizer.step() calls"


def test_step_on_a_function_counts_its_calls(project):
    (project / "loop.py").write_text(
        "import torch\nfrom helpers import no_optimizer_step\n"
        "for _ in range(6):\n    no_optimizer_step(torch.randn(8, 8))\n"
    )
    result = run_script(
        project / "loop.py", [], out=project / "traces", step_on="helpers:no_optimizer_step"
    )
    assert result.steps == 6 and not result.whole_run and result.exit_code == 0
    trace = kinetoscope.load(result.written[0].trace)
    assert step_numbers(trace) == [2, 3, 4]


def test_a_script_that_never_steps_is_profiled_whole(project):
    (project / "once.py").write_text(
        "import torch\nwith torch.profiler.record_function('setup'):\n"
        "    (torch.randn(8, 8) @ torch.randn(8, 8)).sum()\n"
    )
    result = run_script(project / "once.py", [], out=project / "traces")
    assert result.whole_run and result.steps == 0
    [written] = result.written
    trace = kinetoscope.load(written.trace)
    assert step_numbers(trace) == [0]  # the whole run is one step
    assert "setup" in trace.names


def test_too_few_steps_for_the_schedule_is_one_line_exit_2(project):
    done = profile_here("train.py", "--wait", "3", "--", "--steps", "2", cwd=project)
    assert done.returncode == 2
    [line] = error_lines(done.stderr)
    assert "stepped 2 time(s), too few to reach the schedule's first recorded step (#4)" in line


def test_a_failing_script_keeps_its_status_and_its_trace(project):
    (project / "fails.py").write_text("import torch\ntorch.randn(2).sum()\nraise SystemExit(3)\n")
    done = profile_here("fails.py", "--out", "traces", cwd=project)
    assert done.returncode == 3
    assert "the script exited with status 3" in error_lines(done.stderr)
    assert list((project / "traces" / "fails").glob("*.pt.trace.json"))


def test_bad_step_on_is_a_usage_error(project):
    with pytest.raises(UsageError, match="expected module:function"):
        run_script(project / "train.py", [], step_on="helpers")
    with pytest.raises(UsageError, match="is not a function of helpers"):
        run_script(project / "train.py", [], step_on="helpers:missing")


def test_optimizer_steps_survive_a_scheduler_and_are_undone(project):
    import torch

    (project / "sched.py").write_text(
        "import torch\nmodel = torch.nn.Linear(4, 1)\n"
        "opt = torch.optim.AdamW(model.parameters(), lr=0.1)\n"
        "sched = torch.optim.lr_scheduler.StepLR(opt, 2)\n"
        "for _ in range(6):\n    model(torch.randn(8, 4)).sum().backward()\n"
        "    opt.step()\n    sched.step()\n"
    )
    result = run_script(project / "sched.py", [], out=project / "traces")
    assert result.steps == 6
    assert step_numbers(kinetoscope.load(result.written[0].trace)) == [2, 3, 4]
    # only torch's own profiling wrapper remains on the class, not ours
    assert torch.optim.AdamW.step.hooked
    assert not hasattr(torch.optim.AdamW.step, "_kinetoscope_steps")
    assert "_patch_step_function" in torch.optim.Optimizer.__dict__
    assert torch.optim.Optimizer._patch_step_function.__qualname__.startswith("Optimizer.")


OWN_STEP = textwrap.dedent(
    """
    import torch

    def train_step(x):
        with torch.profiler.record_function("own_step"):
            return (x @ x).sum()

    def run():
        for _ in range(6):
            train_step(torch.randn(8, 8))  # looked up in the module's globals

    if __name__ == "__main__":
        run()
    """
)


@pytest.mark.parametrize("spec", ["train_step", "__main__:train_step"])
def test_step_on_a_function_the_script_defines(project, spec):
    """No optimizer: only the wrapped calls of the script's own function are steps."""
    (project / "own.py").write_text(OWN_STEP)
    result = run_script(project / "own.py", [], out=project / "traces", step_on=spec)
    assert result.steps == 6 and not result.whole_run and result.exit_code == 0
    trace = kinetoscope.load(result.written[0].trace)
    assert step_numbers(trace) == [2, 3, 4]
    own = [i for i in range(len(trace)) if trace.name(i) == "own_step"]
    assert len(own) == 3  # one call per recorded step, each inside its step
    for i in own:
        assert any(s.start <= trace.ts[i] and trace.end[i] <= s.end for s in trace.steps)


def test_step_on_a_method_of_a_class_the_script_defines(project):
    (project / "cls.py").write_text(
        "import torch\nclass Trainer:\n    def step(self):\n        torch.randn(4).sum()\n"
        "t = Trainer()\nfor _ in range(5):\n    t.step()\n"
    )
    result = run_script(project / "cls.py", [], out=project / "traces", step_on="Trainer.step")
    assert result.steps == 5


def test_step_on_a_name_the_script_does_not_define_is_one_line_exit_2(project):
    (project / "own.py").write_text(OWN_STEP)
    done = profile_here("own.py", "--step-on", "missing", "--out", "t", cwd=project)
    assert done.returncode == 2
    [line] = error_lines(done.stderr)
    assert "own.py defines no missing at module level" in line
    assert not (project / "t").exists()  # refused before anything was created
