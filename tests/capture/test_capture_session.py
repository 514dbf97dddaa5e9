"""`kinetoscope.profile(...)`, `kinetoscope.trace_handler(dir)` and the metadata splice."""

from __future__ import annotations

import io
import json
import re
import sys
import types

import pytest

from kinetoscope.capture.artifacts import _splice_meta
from kinetoscope.capture.deps import inductor_left_unimported

from ..capture_helpers import run_cli, step_numbers


def test_splice_puts_metadata_first_and_keeps_the_rest_byte_for_byte():
    original = b'\n {\n  "schemaVersion": 1,\n  "traceEvents": [{"ph": "X"}]\n}'
    out = io.BytesIO()
    _splice_meta(io.BytesIO(original), out, {"workload": "w", "params": {"size": 4}})
    body = json.loads(out.getvalue())
    assert list(body)[0] == "kinetoscope"
    assert body["kinetoscope"] == {"workload": "w", "params": {"size": 4}}
    assert body["traceEvents"] == [{"ph": "X"}]
    assert out.getvalue().endswith(original[original.index(b"{") + 1 :])


def test_import_kinetoscope_does_not_import_torch():
    code = (
        "import sys, kinetoscope, kinetoscope.cli\n"
        "assert 'torch' not in sys.modules, 'torch imported'\n"
        "assert callable(kinetoscope.profile) and callable(kinetoscope.trace_handler)\n"
        "assert 'torch' not in sys.modules, 'torch imported by attribute access'\n"
    )
    done = run_cli(code=code)
    assert done.returncode == 0, done.stderr


def _lazy_torch(monkeypatch) -> list[str]:
    """A stand-in `torch` that imports `_inductor` on first attribute access, as torch
    does; the list records those imports."""
    fake, imported = types.ModuleType("torch"), []
    fake._lazy_modules = {"_inductor"}

    def lazy(name):
        if name in fake._lazy_modules:
            imported.append(name)
            return types.ModuleType(f"torch.{name}")
        raise AttributeError(name)

    fake.__getattr__ = lazy
    monkeypatch.setitem(sys.modules, "torch", fake)
    monkeypatch.delitem(sys.modules, "torch._inductor", raising=False)
    monkeypatch.delenv("TORCHINDUCTOR_CUDAGRAPHS", raising=False)
    return imported


def test_inductor_left_unimported_only_while_torch_has_not_imported_it(monkeypatch):
    """Hidden inside the block, lazy again after; asked as torch asks it when Inductor is
    imported already or its CUDA graphs are switched on by the environment."""
    imported = _lazy_torch(monkeypatch)
    with inductor_left_unimported():
        assert not hasattr(sys.modules["torch"], "_inductor") and imported == []
    assert hasattr(sys.modules["torch"], "_inductor") and imported == ["_inductor"]
    monkeypatch.setenv("TORCHINDUCTOR_CUDAGRAPHS", "1")
    with inductor_left_unimported():
        assert hasattr(sys.modules["torch"], "_inductor")
    monkeypatch.delenv("TORCHINDUCTOR_CUDAGRAPHS")
    monkeypatch.setitem(sys.modules, "torch._inductor", types.ModuleType("torch._inductor"))
    with inductor_left_unimported():
        assert hasattr(sys.modules["torch"], "_inductor")
    assert imported == ["_inductor"] * 3


torch = pytest.importorskip("torch")

import kinetoscope  # noqa: E402

TENSORBOARD_NAME = re.compile(r"^(?P<worker>.+)\.(?P<ns>\d{19})\.pt\.trace\.json(\.gz)?$")


def test_profile_context_manager_writes_trace_and_table(tmp_path):
    x = torch.randn(8, 8)
    with kinetoscope.profile(out=tmp_path, steps=2, device="cpu", meta={"run": "t"}) as prof:
        for _ in range(4):
            with torch.profiler.record_function("my_step"):
                x @ x
            prof.step()
    [written] = prof.written
    assert TENSORBOARD_NAME.match(written.trace.name)
    assert written.table.name == written.trace.name.replace(".pt.trace.json", ".txt")
    assert "my_step" in written.table.read_text()
    trace = kinetoscope.load(written.trace)
    assert "my_step" in trace.names
    assert step_numbers(trace) == [2, 3]
    meta = trace.meta.kinetoscope
    assert meta["run"] == "t"
    assert meta["schedule"] == {"wait": 1, "warmup": 1, "active": 2, "repeat": 1}


def test_trace_handler_with_plain_torch_profiler_uses_tensorboard_names(tmp_path):
    handler = kinetoscope.trace_handler(tmp_path, worker_name="rank0", gzip=True)
    schedule = torch.profiler.schedule(wait=0, warmup=1, active=1, repeat=2)
    x = torch.randn(8, 8)
    with torch.profiler.profile(schedule=schedule, on_trace_ready=handler) as prof:
        for _ in range(4):
            x @ x
            prof.step()
    traces = sorted(p.name for p in tmp_path.glob("*.pt.trace.json.gz"))
    assert len(traces) == 2
    assert all(TENSORBOARD_NAME.match(n).group("worker") == "rank0" for n in traces)
    assert sorted(p.name for p in tmp_path.glob("*.txt")) == [
        n.replace(".pt.trace.json.gz", ".txt") for n in traces
    ]
    first = kinetoscope.load(tmp_path / traces[0])
    assert step_numbers(first) == [1]
    assert first.meta.kinetoscope["torch_version"] == torch.__version__
    assert first.meta.kinetoscope["activities"] == ["CPU"]


def test_profile_rejects_a_bad_schedule(tmp_path):
    with pytest.raises(kinetoscope.KinetoscopeError, match="active"):
        kinetoscope.profile(out=tmp_path, steps=(1, 1, 0))


STEPS_ONLY = """
import torch

def step():
    torch.ones(4) + 1

for _ in range(8):
    step()
"""


def test_profiling_a_program_that_never_compiles_imports_no_inductor(tmp_path):
    """torch.profiler's start of a cycle asks `hasattr(torch, "_inductor")`, and torch
    answers by importing torch._inductor and torch._dynamo: about 2 s of CPU in every
    `profile` run and tune trial of a program that never compiles. Neither
    `kinetoscope.profile` nor a script's run may pay it, and both still write their
    trace; torch._inductor stays importable. Two cycles with no wait, so that a cycle
    starts both on entering the profiler and at a step. In a child: this worker may
    have imported them already."""
    (tmp_path / "steps.py").write_text(STEPS_ONLY)
    code = (
        "import sys, torch, kinetoscope\n"
        "from kinetoscope.capture.script import run_script\n"
        "with kinetoscope.profile(out='loop', steps=(0, 1, 1, 2), device='cpu') as prof:\n"
        "    for _ in range(4):\n"
        "        torch.ones(4) + 1\n"
        "        prof.step()\n"
        "done = run_script('steps.py', [], out='script', step_on='step', device='cpu')\n"
        "assert len(prof.written) == 2, prof.written\n"
        "assert done.written and not done.whole_run, done\n"
        "imported = sorted(m for m in ('torch._dynamo', 'torch._inductor') if m in sys.modules)\n"
        "assert not imported, imported\n"
        "assert torch._inductor.__name__ == 'torch._inductor'\n"
    )
    done = run_cli(code=code, cwd=tmp_path)
    assert done.returncode == 0, done.stderr[-3000:]
