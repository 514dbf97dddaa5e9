"""One real `kinetoscope sweep` of the matmul workload on CPU, recorded once per test run
and read by every test that only looks at what a sweep wrote (its table, data, plots,
traces, exit code and the lines it printed).

A sweep runs a `profile` child per value, each about 7 s of CPU before it records
anything (torch's import and the profiler's first trace): the three files that each ran
their own sweep spent about 90 s of CPU between them. A test of what a sweep does to a
folder that has one (tests/compare/test_sweep_files.py) still runs a second one.

`size=0,16,512`, `--active 5`, one BLAS thread (on a shared CPU, thread hand-offs make
tiny GEMMs erratic), holds the cases the tests need:

- size 0: `profile` refuses it (exit 2, before importing torch): a failed row, and the
  sweep goes on and exits 1 at its end;
- size 16: a 16x16 GEMM, microseconds of compute under tens of Python and dispatch;
- size 512: 268 MFLOP a step, where the CPU computes (compute-bound).
"""

from __future__ import annotations

import json
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

import pytest

from ..capture_helpers import run_here, sources_first
from ..conftest import recorded_once

SIZES = (16, 512)  # the values that profile, after a size 0 that `profile` refuses
VARY = "size=0," + ",".join(map(str, SIZES))


@dataclass(frozen=True)
class Sweep:
    out: Path  # the sweep's --out folder: sweeps/, 01_matmul_add/
    returncode: int
    stdout: str
    stderr: str

    @property
    def data(self) -> dict:
        return json.loads((self.out / "sweeps" / "matmul_add_size.json").read_text())

    def copy(self, to: Path) -> Path:
        """A copy of the --out folder at `to`, for a test that writes into it (the
        shared one stays as the sweep left it). Paths inside the data and the printed
        lines still name the shared folder."""
        shutil.copytree(self.out, to)
        return to


def run_sweep(out: Path, *args: str) -> subprocess.CompletedProcess:
    """`kinetoscope sweep matmul_add ARGS --device cpu --out OUT` in this process
    (`run_here`: the sweep itself imports no torch, its `profile` runs are children),
    answered as a child's run; its children get this worktree's sources first and one
    BLAS thread."""
    with pytest.MonkeyPatch.context() as env:
        env.setenv("OMP_NUM_THREADS", "1")
        env.setenv("PYTHONPATH", sources_first())
        return run_here("sweep", "matmul_add", *args, "--device", "cpu", "--out", out)


@pytest.fixture(scope="session")
def matmul_sweep(tmp_path_factory) -> Sweep:
    """The shared sweep (see the module's docstring); read it, or `copy` it to write."""
    pytest.importorskip("torch")

    def record(folder: Path) -> None:
        done = run_sweep(folder / "out", "--vary", VARY, "--active", "5")
        result = {"returncode": done.returncode, "stdout": done.stdout, "stderr": done.stderr}
        (folder / "result.json").write_text(json.dumps(result))

    folder = recorded_once(tmp_path_factory, "matmul_sweep", record)
    return Sweep(folder / "out", **json.loads((folder / "result.json").read_text()))
