"""Progress and noise: a long command says what it is doing (piped: one `[kinetoscope]`
line per stage on stderr), and the profiler's own chatter (Kineto's USDT start/stop lines,
torch's clears-events warning) stays out of the user's output while a real warning and a
script's own stderr still show."""

from __future__ import annotations

import os

import pytest

from kinetoscope import progress
from kinetoscope.capture.quiet import noise_filtered

from .capture_helpers import run_cli

USDT = b"USDT:2026-11-25 12:50:06 25239:25239 SyncActivityProfilerHandler.cpp:52] profiler_start\n"


def test_noise_filter_drops_kineto_markers_and_keeps_real_lines(capfd):
    with noise_filtered() as quiet:
        with quiet.around():
            os.write(2, USDT + b"a real warning\n" + USDT.replace(b"start", b"stop"))
        os.write(2, b"outside the profiler calls\n")
    err = capfd.readouterr().err
    assert "USDT" not in err
    assert err.splitlines() == ["a real warning", "outside the profiler calls"]


def test_plain_lines_only_while_a_command_reports(capsys):
    progress.stage("not shown: nobody asked")
    with progress.reporting():
        progress.stage("warming up: 3 iterations")
        progress.count("profiling: step 2 of 5", 2, 5)  # steps: no line of their own
        progress.count("trial 2 of 4: batch=32", 1, 4, line=True)  # trials: one line each
    progress.stage("not shown either")
    lines = capsys.readouterr().err.splitlines()
    assert lines[0] == "[kinetoscope] warming up: 3 iterations"
    assert lines[1].startswith("[kinetoscope] trial 2 of 4: batch=32 (")
    assert "s elapsed, about" in lines[1] and len(lines) == 2


@pytest.fixture(scope="module")
def piped_profile(tmp_path_factory):
    pytest.importorskip("torch")
    out = tmp_path_factory.mktemp("progress")
    script = out / "warns.py"
    script.write_text(
        "import sys, warnings\nimport torch\n"
        "m = torch.nn.Linear(4, 4)\nopt = torch.optim.SGD(m.parameters(), lr=0.1)\n"
        "for i in range(8):\n"
        "    m(torch.ones(2, 4)).sum().backward()\n    opt.step()\n"
        "    if i == 2:\n"
        "        warnings.warn('a real warning from the script')\n"
        "        print('the script on stderr', file=sys.stderr)\n"
    )
    workload = run_cli("profile", "matmul_add", "--size", "8", "--repeat", "2", "--warmup", "1",
                       "--out", str(out), cwd=out)  # fmt: skip
    scripted = run_cli("profile", str(script), "--out", str(out), cwd=out)
    return workload, scripted


def test_profile_reports_each_stage_and_no_profiler_noise(piped_profile):
    done, _ = piped_profile
    assert done.returncode == 0, done.stderr
    assert "USDT" not in done.stderr and "Profiler clears events" not in done.stderr
    lines = done.stderr.splitlines()
    assert all(line.startswith("[kinetoscope] ") for line in lines), lines
    # a stage that ran past 2 s says so again (": still running, N s"): not a new stage
    stages = [
        line.removeprefix("[kinetoscope] ").split(":")[0]
        for line in lines
        if ": still running, " not in line
    ]
    assert stages[:4] == ["importing torch", "building matmul_add (8_fp32_warm_eager) on CPU",
                          "warming up", "profiling"]  # fmt: skip
    assert stages.count("exporting the trace of cycle 1") == 1
    assert stages.count("exporting the trace of cycle 2") == 1
    assert sum(s.startswith("reading the trace") for s in stages) == 2
    assert "[kinetoscope]" not in done.stdout  # stdout is the report alone


def test_script_profile_keeps_its_real_warning_and_stderr(piped_profile):
    _, done = piped_profile
    assert done.returncode == 0, done.stderr
    assert "USDT" not in done.stderr
    assert "UserWarning: a real warning from the script" in done.stderr
    assert "the script on stderr" in done.stderr
    assert "[kinetoscope] running warns.py under the profiler" in done.stderr


def test_a_large_trace_reports_bytes_read(monkeypatch, capsys):
    import kinetoscope
    from kinetoscope.trace import source

    from .conftest import corpus

    path = corpus("gpu/param_linear_train_2080ti.json.gz")  # 1.2 MB: "large" for the test
    monkeypatch.setattr(source, "REPORT_FROM", 0)
    monkeypatch.setenv("KINETOSCOPE_NO_CACHE", "1")  # a parse: a cached trace is not read
    counted = []
    monkeypatch.setattr(progress, "count", lambda text, done, total, **_: counted.append(done))
    with progress.reporting():
        kinetoscope.load(path, split_min_bytes=None)
    assert capsys.readouterr().err.startswith(f"[kinetoscope] reading {path} (1 MiB)")
    size = path.stat().st_size
    assert counted and all(0 < done <= size for done in counted)


def test_a_stage_silent_for_2_s_says_it_is_still_running(capsys, monkeypatch):
    """Piped, a stage used to be one line and then nothing however long it ran (`profile`'s
    profiled steps, a `--compile` build, a tune trial). The clock is turned by hand: what
    is checked is what is said at which silence, not how long anything took."""
    import time

    clock = [1000.0]
    monkeypatch.setattr(progress, "_now", lambda: clock[0])

    def said(expected: str) -> list[str]:
        deadline = time.monotonic() + 30  # a hang guard: the watcher looks 4 times a second
        lines: list[str] = []
        while not any(expected in line for line in lines) and time.monotonic() < deadline:
            time.sleep(0.05)
            lines += capsys.readouterr().err.splitlines()
        return lines

    with progress.reporting():
        progress.stage("profiling: 5 steps")
        clock[0] += 3
        assert said("still running")[-1] == "[kinetoscope] profiling: 5 steps: still running, 3 s"
        progress.count("profiling: step 2 of 5", 1, 5)  # a step: no line of its own
        clock[0] += 2  # 5 s since the stage's line: the next is due at 2 x 2 s
        assert said("step 2 of 5")[-1] == (
            "[kinetoscope] profiling: step 2 of 5: still running, 5 s"
        )
        progress.stage("exporting the trace")  # the command speaks: the count starts again
        clock[0] += 2
        assert said("exporting the trace: still")[-1].endswith("still running, 2 s")
    assert capsys.readouterr().err == ""
