"""`explain --max-memory`: wall, CPU and peak memory of one run in a fresh process.

The command is what a user runs (`python -m kinetoscope explain FILE --max-memory
SIZE --format json -o OUT`). While it runs, `/proc/PID/status` is sampled every
0.2 s for the peaks of RssAnon (anonymous memory: what must fit in RAM) and
RssFile (resident pages of mapped files, here the out-of-core columns: the kernel
may drop these under pressure); at the end `wait4` gives the child's CPU time and
`ru_maxrss` (peak resident set, both kinds together). Throughput is the file's
bytes over the wall time.

`--cgroup-limit SIZE` runs the command inside a new memory cgroup whose hard limit
is SIZE (v1 `memory.limit_in_bytes` or v2 `memory.max`; root only): the test of
whether the run fits, since `ru_maxrss` also counts file pages the kernel would
drop under that limit. The cgroup's own peak and the exit code are added (an
out-of-memory kill exits -9).

`--profile` instead runs explain in this process and lists the largest numpy
arrays the `Trace` holds afterwards (its columns and cached analyses), saying
which are file-backed: where the memory of the out-of-core path goes.

    python bench/bench_max_memory.py /tmp/large/resnet_train_ns_1000MB.json --max-memory 2GB
    python bench/bench_max_memory.py FILE --max-memory 0 --profile
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def _status_kb(pid: int) -> dict[str, int]:
    out = {}
    try:
        with open(f"/proc/{pid}/status") as handle:
            for line in handle:
                key, _, value = line.partition(":")
                if key in ("VmRSS", "RssAnon", "RssFile"):
                    out[key] = int(value.split()[0])
    except OSError:
        pass
    return out


class MemoryCgroup:
    """A memory cgroup with a hard limit, made for one run and removed after it."""

    def __init__(self, limit_bytes: int) -> None:
        root = Path("/sys/fs/cgroup")
        name = f"kinetoscope-bench-{os.getpid()}"
        if (root / "memory").is_dir():  # v1: one hierarchy per controller
            self.path, self.limit, self.peak = (
                root / "memory" / name,
                "memory.limit_in_bytes",
                ("memory.max_usage_in_bytes"),
            )
        else:
            self.path, self.limit, self.peak = root / name, "memory.max", "memory.peak"
        self.path.mkdir()
        (self.path / self.limit).write_text(str(limit_bytes))

    def enter(self) -> None:
        """In the child before exec: move this process into the cgroup."""
        (self.path / "cgroup.procs").write_text(str(os.getpid()))

    def peak_bytes(self) -> int | None:
        try:
            return int((self.path / self.peak).read_text())
        except (OSError, ValueError):
            return None

    def remove(self) -> None:
        self.path.rmdir()


def measure(
    path: Path, max_memory: str, cgroup_limit: int | None = None, keep: Path | None = None
) -> dict:
    """One `explain` in a fresh subprocess: wall, CPU, ru_maxrss and sampled peaks,
    inside a memory cgroup limited to `cgroup_limit` bytes when given; the report
    is copied to `keep` when given (to compare it with another run's)."""
    env = dict(os.environ, PYTHONPATH=str(REPO / "src"))
    cgroup = MemoryCgroup(cgroup_limit) if cgroup_limit else None
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "report.json"
        cmd = [sys.executable, "-m", "kinetoscope", "explain", str(path)]
        cmd += ["--max-memory", max_memory, "--format", "json", "-o", str(out)]
        start = time.perf_counter()
        child = subprocess.Popen(
            cmd, env=env, stdout=subprocess.DEVNULL, preexec_fn=cgroup.enter if cgroup else None
        )
        peaks = {"VmRSS": 0, "RssAnon": 0, "RssFile": 0}
        done = threading.Event()

        def sample() -> None:
            while not done.is_set():
                for key, value in _status_kb(child.pid).items():
                    peaks[key] = max(peaks[key], value)
                done.wait(0.2)

        sampler = threading.Thread(target=sample, daemon=True)
        sampler.start()
        _, status, usage = os.wait4(child.pid, 0)
        wall = time.perf_counter() - start
        done.set()
        sampler.join()
        child.returncode = os.waitstatus_to_exitcode(status)
        report = json.loads(out.read_text()) if out.exists() else {}
        if keep and out.exists():
            keep.write_bytes(out.read_bytes())
    size = path.stat().st_size
    limited = {}
    if cgroup:
        peak = cgroup.peak_bytes()
        cgroup.remove()
        limited = {
            "cgroup_limit_mib": round(cgroup_limit / 2**20, 1),
            "cgroup_peak_mib": None if peak is None else round(peak / 2**20, 1),
        }
    return {
        "file": str(path),
        "file_mb": round(size / 1e6, 1),
        "max_memory": max_memory,
        "exit": child.returncode,
        "out_of_core": report.get("trace", {}).get("out_of_core"),
        "events": report.get("trace", {}).get("events"),
        "wall_s": round(wall, 1),
        "cpu_s": round(usage.ru_utime + usage.ru_stime, 1),
        "ru_maxrss_mb": round(usage.ru_maxrss / 1024, 1),
        "peak_rss_anon_mb": round(peaks["RssAnon"] / 1024, 1),
        "peak_rss_file_mb": round(peaks["RssFile"] / 1024, 1),
        "mb_per_s": round(size / 1e6 / wall, 1),
        **limited,
    }


class PeakStack:
    """Samples this process's RssAnon every 20 ms with the main thread's Python
    stack: the stack at the highest sample says which code holds the peak."""

    def __init__(self) -> None:
        self.peak_kb, self.stack = 0, []
        self.done = threading.Event()
        self.main = threading.get_ident()
        self.thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        import traceback

        while not self.done.is_set():
            anon = _status_kb(os.getpid()).get("RssAnon", 0)
            if anon > self.peak_kb:
                frame = sys._current_frames().get(self.main)
                self.peak_kb = anon
                self.stack = traceback.format_stack(frame)[-6:] if frame else []
            self.done.wait(0.02)

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.done.set()
        self.thread.join()


def profile(path: Path, max_memory: str) -> list[tuple[str, float, bool]]:
    """(what, MB, file-backed) of the arrays a Trace holds after `explain`; prints
    the peak RssAnon of the load and of explain with the stack at each peak."""
    import mmap

    import numpy as np

    sys.path.insert(0, str(REPO / "src"))
    import kinetoscope

    with PeakStack() as peak:
        trace = kinetoscope.load(path, max_memory=max_memory)
    print(f"load: peak RssAnon {peak.peak_kb / 1024:.0f} MB at\n{''.join(peak.stack)}")
    with PeakStack() as peak:
        kinetoscope.explain(trace)
    print(f"explain: peak RssAnon {peak.peak_kb / 1024:.0f} MB at\n{''.join(peak.stack)}")
    rows = []
    for name, value in vars(trace).items():
        arrays = [(name, value)] if isinstance(value, np.ndarray) else []
        if hasattr(value, "__dict__") and not isinstance(value, np.ndarray):
            arrays = [
                (f"{name}.{k}", v) for k, v in vars(value).items() if isinstance(v, np.ndarray)
            ]
        for label, array in arrays:
            base = array
            while isinstance(base, np.ndarray) and base.base is not None:
                base = base.base
            rows.append((label, array.nbytes / 2**20, isinstance(base, mmap.mmap)))
    return sorted(rows, key=lambda r: -r[1])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("trace", type=Path)
    parser.add_argument("--max-memory", default="2GB")
    parser.add_argument("--profile", action="store_true")
    parser.add_argument(
        "--cgroup-limit", help="run inside a memory cgroup with this hard limit, e.g. 2GB"
    )
    parser.add_argument("--keep-report", type=Path, help="copy the JSON report here")
    args = parser.parse_args(argv)
    if args.profile:
        rows = profile(args.trace, args.max_memory)
        for label, mb, mapped in rows[:25]:
            print(f"{label:36} {mb:9.1f} MB  {'file' if mapped else 'anonymous'}")
        anon = sum(mb for _, mb, mapped in rows if not mapped)
        print(f"{'anonymous arrays in all':36} {anon:9.1f} MB")
        return 0
    limit = None
    if args.cgroup_limit:
        sys.path.insert(0, str(REPO / "src"))
        from kinetoscope.trace.budget import parse_size

        limit = parse_size(args.cgroup_limit)
    print(json.dumps(measure(args.trace, args.max_memory, limit, args.keep_report)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
