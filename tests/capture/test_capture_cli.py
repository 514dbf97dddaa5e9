"""`kinetoscope profile` end to end through the CLI's own `main`, and its error paths.

In this process (`profile_here`): what the command prints, writes and exits with is the
point. The missing-torch test keeps a child (a process that cannot import torch); the
console entry's own runs of `profile` are in tests/test_progress.py and
tests/capture/test_profile_safety.py."""

from __future__ import annotations

import importlib.util

import pytest

from ..capture_helpers import error_lines, profile_here, run_cli

HAS_TORCH = importlib.util.find_spec("torch") is not None
needs_torch = pytest.mark.skipif(not HAS_TORCH, reason="torch not installed")


@needs_torch
def test_main_job_profiles_matmul_add_on_this_machine(tmp_path):
    done = profile_here("matmul_add", "--size", "16", "--out", "traces", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    folder = tmp_path / "traces" / "01_matmul_add"
    [trace] = folder.glob("16_*_cold_eager.json")  # fp32 on CPU, bf16 on a GPU
    assert trace.with_suffix(".txt").is_file()
    assert "trace: traces/01_matmul_add/16_" in done.stdout
    assert "Verdict" in done.stdout and "(3 steps)" in done.stdout  # explain of the new trace


def test_missing_torch_is_one_line_naming_the_extra(tmp_path):
    code = (
        "import sys; sys.modules['torch'] = None\n"
        "sys.argv = ['kinetoscope', 'profile', 'matmul_add', '--out', 'traces']\n"
        "from kinetoscope.cli import main; main()\n"
    )
    done = run_cli(code=code, cwd=tmp_path)
    assert done.returncode == 2
    assert error_lines(done.stderr) == [
        "kinetoscope: error: profiling needs torch, which is not installed: "
        "pip install 'kinetoscope[capture]'"
    ]
    assert not (tmp_path / "traces").exists()


@needs_torch
def test_cuda_requested_but_absent_is_one_line_exit_2(tmp_path):
    import torch

    if torch.cuda.is_available():
        pytest.skip("this machine has a GPU")
    done = profile_here("matmul_add", "--device", "cuda", cwd=tmp_path)
    assert done.returncode == 2
    [line] = error_lines(done.stderr)
    assert "--device cuda was requested" in line and "sees no GPU" in line


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (["--size", "0"], "Invalid value for '--size'"),
        (["--active", "0"], "Invalid value for '--active'"),
        (["--dtype", "fp8"], "Invalid value for '--dtype'"),
        (["--impl", "flash"], "Invalid value for '--impl'"),
        (["--backend", "xformers"], "Invalid value for '--backend'"),
    ],
)
def test_bad_parameter_values_are_typer_errors_exit_2(tmp_path, args, expected):
    done = profile_here("matmul_add", *args, cwd=tmp_path)
    assert done.returncode == 2
    assert expected in done.stderr
    assert "Traceback" not in done.stderr


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (["resnet"], "unknown workload 'resnet'"),
        (["matmul_add", "--", "x"], "only a script takes them"),
        (["matmul_add", "--step-on", "m:f"], "--step-on applies to scripts"),
        (["matmul_add", "--compile-mode", "max-autotune"], "--compile-mode needs --compile"),
        (["nowhere.py"], "nowhere.py: no such script"),
        (["train.py", "--size", "4"], "--size: workload options do not apply to a script"),
    ],
)
def test_unusable_requests_are_one_line_exit_2(tmp_path, args, expected):
    done = profile_here(*args, cwd=tmp_path)
    assert done.returncode == 2
    [line] = error_lines(done.stderr)
    assert expected in line


@needs_torch
def test_an_option_of_another_workload_is_rejected():
    from kinetoscope.capture.runner import CaptureOptions, run_workload
    from kinetoscope.errors import UsageError

    with pytest.raises(UsageError, match="--heads does not apply to workload matmul_add"):
        run_workload("matmul_add", {"heads": 4}, CaptureOptions(device="cpu"))


def test_profile_help_works(tmp_path):
    done = profile_here("--help", cwd=tmp_path)
    assert done.returncode == 0
    assert "--num-workers" in done.stdout and "--step-on" in done.stdout


@needs_torch
def test_an_unwritable_output_folder_is_a_usage_error(tmp_path):
    from kinetoscope.capture.runner import CaptureOptions, run_workload
    from kinetoscope.errors import UsageError

    blocker = tmp_path / "file"
    blocker.write_text("not a folder")
    with pytest.raises(UsageError, match="cannot create the output folder"):
        run_workload("matmul_add", {"size": 4}, CaptureOptions(device="cpu", out=blocker))
    assert blocker.read_text() == "not a folder"
