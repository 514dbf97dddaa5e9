"""Shared fixtures: the project's copy of the real trace corpus (tests/data/traces, see its
README for provenance and licenses), and tiny traces built in code."""

from __future__ import annotations

import atexit
import gc
import gzip
import json
import os
import shutil
import signal
import sys
import tempfile
from pathlib import Path

import pytest

# Strict rules for the whole suite (`rules.engine`): a rule that raises fails the test
# instead of becoming a "rule failed" entry, which a test expecting the rule to stay
# silent would pass. Set at import, so kinetoscope run in a subprocess inherits it; a
# test of the degradation itself removes it (monkeypatch.delenv).
os.environ.setdefault("KINETOSCOPE_STRICT_RULES", "1")

# The trace cache (`trace/cache.py`) of this run: a fresh folder, never the user's own.
# Made by the controlling process and inherited by pytest-xdist's workers and by the
# subprocesses tests start (entries are written whole and renamed into place, so they
# share it safely); removed when the run ends.
if not (os.environ.get("PYTEST_XDIST_WORKER") and os.environ.get("KINETOSCOPE_CACHE")):
    os.environ["KINETOSCOPE_CACHE"] = tempfile.mkdtemp(prefix="kinetoscope-test-cache-")
    atexit.register(shutil.rmtree, os.environ["KINETOSCOPE_CACHE"], True)
os.environ.pop("KINETOSCOPE_NO_CACHE", None)

# Ctrl-C as a terminal gives it, whatever started this run: a shell script's background
# job (`pytest ... &`, nohup) starts with SIGINT ignored, which every child would keep
# (an ignored signal stays ignored across exec) and Python would then never install its
# KeyboardInterrupt handler there: the tests that Ctrl-C a `profile`, a `tune` or a load
# saw their child run on to exit 0. A test of an ignored SIGINT sets it in its child.
if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)

# Cyclic garbage collected in larger batches. A worker's heap holds torch, Dynamo, Inductor
# and transformers (hundreds of thousands of objects) before its tests make anything, and
# each full collection walks all of it: at the default thresholds (700, 10, 10) ten
# heavy in-process test files ran 25 full collections of about 0.3 s, 8-10% of their CPU
# (docs/benchmarks.md, "2026-11-29 (sixth session)"). Collection itself is unchanged: a
# test that needs an object gone calls gc.collect(), and the product sets nothing here.
gc.set_threshold(50_000, 20, 20)

REPO = Path(__file__).resolve().parents[1]


def recorded_once(tmp_path_factory, name: str, record) -> Path:
    """The folder `record(folder)` fills, filled once per test run: a recording takes tens
    of seconds, and under pytest-xdist (`-n auto`) every worker would make its own. The
    workers share their base temporary folder's parent; the first to take the lock
    records, the others wait for it and read its files."""
    import fcntl

    base = tmp_path_factory.getbasetemp()
    if os.environ.get("PYTEST_XDIST_WORKER"):
        base = base.parent
    folder = base / name
    with open(base / f"{name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not (folder / ".complete").exists():
            folder.mkdir(exist_ok=True)
            record(folder)
            (folder / ".complete").touch()
    return folder


CORPUS = REPO / "tests" / "data" / "traces"


def corpus_files() -> list[Path]:
    if not CORPUS.is_dir():
        return []
    return sorted(p for p in CORPUS.rglob("*.json*") if p.is_file())


def corpus(relative: str) -> Path:
    """Path of a corpus trace. The corpus ships with the project, so a missing trace is a
    broken checkout: the test fails, it does not skip."""
    path = CORPUS / relative
    if not path.exists():
        pytest.fail(f"corpus trace {relative} not found under {CORPUS}")
    return path


#: Traces the GPU check kit recorded on an H100 (tests/data/gpu_kit_h100/README.md)
GPU_KIT_H100 = REPO / "tests" / "data" / "gpu_kit_h100"
#: CPU traces this project's tests recorded, kept (tests/data/cpu_recordings/README.md)
CPU_RECORDINGS = REPO / "tests" / "data" / "cpu_recordings"


def gpu_kit_recording(name: str) -> Path:
    """Path of a GPU kit recording (`attention_math` -> attention_math.json.gz); it ships
    with the project, so a missing one fails the test."""
    path = GPU_KIT_H100 / f"{name}.json.gz"
    if not path.exists():
        pytest.fail(f"GPU kit recording {path.name} not found under {GPU_KIT_H100}")
    return path


def write_trace(path: Path, events: list[dict], gz: bool = False, **top) -> Path:
    """Write a Kineto-shaped trace file with the given events (tiny traces for unit tests)."""
    body = {"schemaVersion": 1, **top, "traceEvents": events}
    data = json.dumps(body).encode()
    if gz:
        path.write_bytes(gzip.compress(data))
    else:
        path.write_bytes(data)
    return path


def op(name, ts, dur, tid=1, pid=100, cat="cpu_op", **args):
    return {
        "ph": "X",
        "cat": cat,
        "name": name,
        "pid": pid,
        "tid": tid,
        "ts": ts,
        "dur": dur,
        "args": args,
    }


def kernel(name, ts, dur, correlation, stream=7, device=0, **args):
    return {
        "ph": "X",
        "cat": "kernel",
        "name": name,
        "pid": device,
        "tid": stream,
        "ts": ts,
        "dur": dur,
        "args": {"correlation": correlation, "stream": stream, "device": device, **args},
    }


def launch(ts, dur, correlation, tid=1, pid=100, name="cudaLaunchKernel", external_id=None):
    args = {"correlation": correlation}
    if external_id is not None:
        args["External id"] = external_id
    return {
        "ph": "X",
        "cat": "cuda_runtime",
        "name": name,
        "pid": pid,
        "tid": tid,
        "ts": ts,
        "dur": dur,
        "args": args,
    }


#: Test files that take minutes, mostly waiting on children (tune sessions, the README's
#: loop, `profile` and sweep runs, Chromium pages), largest first as measured with
#: `bench/pytest_cpu_times.py` (docs/benchmarks.md, "The test suite's time").
#: pytest-xdist hands out whole files (`--dist loadfile`), by default those with the
#: most tests first: these few-test files went out last, and runs ended with one worker
#: waiting minutes on them while the other cores had nothing left to do.
LONG_FILES = (
    "tests/tune/test_tune_scripts.py",
    "tests/test_readme.py",
    "tests/capture/test_profile_safety.py",
    "tests/compare/test_sweep_files.py",
    "tests/capture/test_capture_cli.py",
)


def pytest_xdist_auto_num_workers(config):
    """`-n auto`: up to twice the cores (four more at most). Many tests spend their time
    waiting on a child (`profile`, `tune` trials, Chromium, a server, a hang bound), and
    a worker per core left a core idle through each wait: on 2 cores, 4 workers ran the
    suite in 13 min 48 s where 2 took 15 min 33 s (docs/benchmarks.md)."""
    if hasattr(os, "sched_getaffinity"):
        cores = len(os.sched_getaffinity(0))
    else:
        cores = os.cpu_count() or 1
    return min(2 * cores, cores + 4)


def pytest_configure(config):
    # the order below, not xdist's "most tests first" (a no-op without xdist)
    if hasattr(config.option, "loadscopereorder"):
        config.option.loadscopereorder = False
    if not os.environ.get("PYTEST_XDIST_WORKER"):
        _compile_the_package_once()
        _rewrite_the_tests_once(config)


def _compile_the_package_once():
    """Byte-compile kinetoscope's sources once, in the controlling process, before any
    worker or child starts. With PYTHONDONTWRITEBYTECODE=1 (set on this project's
    machines) nothing writes a .pyc, so every `python -m kinetoscope` a test starts
    compiled the modules it imports from source: about a third of a bare CLI start (0.99
    s of CPU, 0.65 s with the .pyc files), in several hundred children per run. Reading a
    .pyc needs no permission to write one; a source newer than its .pyc is recompiled."""
    import compileall
    import importlib.util

    spec = importlib.util.find_spec("kinetoscope")
    if spec is not None and spec.submodule_search_locations:
        for folder in spec.submodule_search_locations:
            compileall.compile_dir(folder, quiet=1)


def _rewrite_the_tests_once(config):
    """Rewrite the test files' asserts once, in the controlling process, and leave them
    where pytest looks for them (`__pycache__/*-pytest-*.pyc`). Under
    PYTHONDONTWRITEBYTECODE=1 pytest reads such a file but never writes one, so each
    worker rewrote all of them while collecting: 13 of its 25 s of CPU, four times over
    with `-n auto` on 2 cores. Uses pytest's own rewriting functions (private, stable
    since pytest 7); where they are gone, the workers rewrite as before."""
    workers = getattr(config.option, "numprocesses", None)  # a run in one process: its own
    if not workers or not sys.dont_write_bytecode or config.getoption("assertmode") != "rewrite":
        return
    try:
        from _pytest.assertion import rewrite

        state = config.stash[rewrite.assertstate_key]
        cache_dir, read, rewritten, write = (
            rewrite.get_cache_dir,
            rewrite._read_pyc,
            rewrite._rewrite_test,
            rewrite._write_pyc,
        )
        tail = rewrite.PYC_TAIL
    except (ImportError, AttributeError, KeyError):
        return
    for source in [*REPO.glob("tests/**/test_*.py"), *REPO.glob("tests/**/conftest.py")]:
        pyc = cache_dir(source) / (source.name[:-3] + tail)
        if read(source, pyc) is None:  # none yet, or older than its source
            pyc.parent.mkdir(exist_ok=True)
            source_hash, code = rewritten(source, config)
            write(state, code, source_hash, pyc)


def pytest_collection_modifyitems(config, items):
    """The long files first, each file's place among the rest as pytest-randomly drew it
    (a stable sort, after its shuffle: every worker collects the same order)."""
    rank = {name: i for i, name in enumerate(LONG_FILES)}
    items.sort(key=lambda item: rank.get(item.nodeid.split("::")[0], len(rank)))
