"""`kinetoscope tune` in this process, its trials too, for the tests of what a session
decides and writes.

A trial is `python -m kinetoscope.tune.trial_run SPEC` (`tune.trials.run_trial`): a child
costs about 3 s of CPU before its first step (the interpreter and `import torch`; 5 s
before capture kept torch.profiler from importing torch._inductor), and 25 such children
made these two files cost 220 s of CPU. Here the parent runs by `run_here`, and
the one call that starts a child (`subprocess.run` in `tune.trials`) runs the same module
as `__main__` in this process instead: the spec file, the result file, the trace and its
reading stay the real ones; the child's environment is `os.environ` for the call.

What the child would have taken with it is put back after each trial (as `profile_here`
does for `profile`): the environment, `sys.argv` and `sys.path`, torch's global RNG and
its thread count, torch.profiler's warnings shown once per process, the knobs read
(`kinetoscope.knob` remembers them per process), the modules the script imported from
its own folder, Dynamo's compiled code (a later test's compile must compile again). An
exception out of the trial is printed and is exit 1, as the interpreter does; warnings
are filtered as a fresh interpreter filters them (torch.compile's own DeprecationWarnings
stay silent, as in a child, instead of reaching pytest's summary).

Not emulated, so kept in children (`run_cli`, or `tune_here(..., children=True)`): the
trial timeout (a hang), signals (Ctrl-C), and environment read at torch's import:
OMP_NUM_THREADS is applied with `torch.set_num_threads`, which is what torch does with it.
"""

from __future__ import annotations

import contextlib
import io
import os
import runpy
import subprocess
import sys
import traceback
import types
import warnings
from pathlib import Path

from ..capture_helpers import forget_modules, run_here, sources_first, torch_state_kept

TRIAL_MODULE = "kinetoscope.tune.trial_run"


def tune_here(*args, children: bool = False) -> subprocess.CompletedProcess:
    """`kinetoscope tune ARGS` by the CLI's `main` in this process (`run_here`); its trials
    in this process too, or in real children (`children`: a test of the trial process
    itself: its timeout, its crash, its exit code), which import this worktree's sources."""
    import kinetoscope.tune.trials as trials

    if children:
        with _environ({**os.environ, "PYTHONPATH": sources_first()}):
            return run_here("tune", *args)
    saved = trials.subprocess
    trials.subprocess = types.SimpleNamespace(
        run=_trial_here, TimeoutExpired=subprocess.TimeoutExpired
    )
    try:
        return run_here("tune", *args)
    finally:
        trials.subprocess = saved


def _trial_here(argv, *, capture_output, text, timeout, env):
    """`subprocess.run(argv, ...)` of one trial, run here: (exit code, stdout, stderr)."""
    assert argv[1:3] == ["-m", TRIAL_MODULE] and capture_output and text, argv
    out, err = io.StringIO(), io.StringIO()
    with _put_back(env), contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        sys.argv = [TRIAL_MODULE, *argv[3:]]
        try:
            runpy.run_module(TRIAL_MODULE, run_name="__main__")
            code = 0
        except SystemExit as done:
            code = 0 if done.code is None else done.code
            if not isinstance(code, int):  # as the interpreter ends: the text, exit 1
                print(code, file=sys.stderr)
                code = 1
        except Exception:  # noqa: BLE001 - the child's interpreter prints it and exits 1
            traceback.print_exc()
            code = 1
    return subprocess.CompletedProcess(argv, code, out.getvalue(), err.getvalue())


@contextlib.contextmanager
def _environ(env: dict):
    saved = dict(os.environ)
    os.environ.clear()
    os.environ.update(env)
    try:
        yield
    finally:
        os.environ.clear()
        os.environ.update(saved)


@contextlib.contextmanager
def _put_back(env: dict):
    """The process as a child would have left it: see the module's docstring."""
    import torch
    import torch._dynamo

    from kinetoscope.tune import knob

    saved = (sys.argv, list(sys.path), set(sys.modules), dict(knob._READ))
    knob._READ.clear()  # a child starts with no knob read
    try:
        with torch_state_kept(), _environ(env), warnings.catch_warnings():
            warnings.resetwarnings()  # a fresh interpreter's filters (python -W unset)
            for category in (ResourceWarning, ImportWarning, PendingDeprecationWarning):
                warnings.simplefilter("ignore", category)
            warnings.simplefilter("ignore", DeprecationWarning)
            warnings.filterwarnings("default", category=DeprecationWarning, module="__main__")
            if env.get("OMP_NUM_THREADS", "").isdigit():
                torch.set_num_threads(int(env["OMP_NUM_THREADS"]))
            yield
    finally:
        argv, path, modules, read = saved
        folders = [Path(p).resolve() for p in set(sys.path) - set(path) if p]
        sys.argv, sys.path[:] = argv, path
        knob._READ.clear()
        knob._READ.update(read)
        torch._dynamo.reset()
        forget_modules(modules, folders)
