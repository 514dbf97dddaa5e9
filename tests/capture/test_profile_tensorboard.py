"""`profile --tensorboard`: the files are where TensorBoard's profiler plugin, HTA and
Perfetto users look, named as `torch.profiler.tensorboard_trace_handler` names them."""

from __future__ import annotations

import re
import socket

import pytest

pytest.importorskip("torch")

from ..capture_helpers import profile_here  # noqa: E402

# tensorboard_trace_handler: f"{worker_name}.{time.time_ns()}.pt.trace.json", worker
# "{socket.gethostname()}_{os.getpid()}"; the plugin lists files ending in .pt.trace.json
TB_NAME = re.compile(re.escape(socket.gethostname()) + r"_(\d+)\.(\d{19})\.pt\.trace\.json")


def test_a_workload_with_tensorboard_gets_tensorboard_trace_handler_names(tmp_path):
    done = profile_here(
        "matmul_add", "--size", "16", "--device", "cpu", "--tensorboard",
        "--out", "traces", cwd=tmp_path,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    folder = tmp_path / "traces" / "01_matmul_add"
    names = sorted(p.name for p in folder.iterdir())
    [trace] = [n for n in names if n.endswith(".json")]
    assert TB_NAME.fullmatch(trace), names
    assert trace.replace(".pt.trace.json", ".txt") in names  # the table beside it
    assert len(names) == 2  # no series-named copy
    assert f"trace: traces/01_matmul_add/{trace}" in done.stdout


def test_without_tensorboard_a_workload_keeps_the_series_names(tmp_path):
    done = profile_here("matmul_add", "--size", "16", "--device", "cpu", "--out", "t", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    names = sorted(p.name for p in (tmp_path / "t" / "01_matmul_add").iterdir())
    assert names == ["16_fp32_cold_eager.json", "16_fp32_cold_eager.txt"]


def test_a_script_with_tensorboard_gets_tensorboard_trace_handler_names(tmp_path):
    (tmp_path / "loop.py").write_text(
        "import torch\n"
        "model = torch.nn.Linear(4, 1)\n"
        "opt = torch.optim.SGD(model.parameters(), lr=0.1)\n"
        "for _ in range(6):\n"
        "    model(torch.randn(8, 4)).sum().backward()\n"
        "    opt.step()\n"
    )
    done = profile_here("loop.py", "--tensorboard", "--out", "tb", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    [trace] = (tmp_path / "tb" / "loop").glob("*.json")
    assert TB_NAME.fullmatch(trace.name), trace.name
