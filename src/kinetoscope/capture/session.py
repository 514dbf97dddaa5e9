"""Profile any loop: `kinetoscope.profile(...)`, and the handler behind
`kinetoscope.trace_handler(dir)` (`integrations.handler` adds the per-cycle reading).

Both produce the same artifacts as `kinetoscope profile`: per profiling cycle a
trace carrying the run's metadata and the profiler's table as text. Default file
names follow TensorBoard's `tensorboard_trace_handler`
(`<worker>.<time_ns>.pt.trace.json[.gz]`), so one folder opens in TensorBoard's
profiler plugin, Perfetto and `kinetoscope` alike.
"""

from __future__ import annotations

import datetime
import os
import socket
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from .. import progress
from .._version import __version__
from ..files.outputs import make_folder, publish, remove_empty_folders, staged
from .artifacts import write_table, write_trace
from .deps import inductor_left_unimported, require_torch
from .device import DeviceChoice, activities, resolve_device
from .machine import LoadMeter
from .quiet import NoiseFilter
from .schedule import Schedule

#: cycle number (from 1) -> (trace file name without `.gz`, table file name)
Naming = Callable[[int], tuple[str, str]]


@dataclass(frozen=True)
class Artifacts:
    """The files one profiling cycle produced."""

    trace: Path
    table: Path


def tensorboard_naming(worker_name: str | None = None) -> Naming:
    """TensorBoard's names: `<worker>.<time_ns>.pt.trace.json`, worker = `<host>_<pid>`."""
    worker = worker_name or f"{socket.gethostname()}_{os.getpid()}"

    def name(_cycle: int) -> tuple[str, str]:
        stem = f"{worker}.{time.time_ns()}"
        return f"{stem}.pt.trace.json", f"{stem}.txt"

    return name


class TraceHandler:
    """An `on_trace_ready=` callback writing the trace (metadata spliced in) and the table.

    `written` lists the `Artifacts` of every cycle handled so far. Each cycle's
    pair is staged then published together (`outputs.publish`): an existing
    artifact is never replaced unless `force`, the pair gets the next free
    number instead (`renamed` lists (wanted, written) trace paths). After
    `close(failed=True)` (Ctrl-C, an error) no further cycle is written, so a
    cycle cut short never becomes a partial trace.
    """

    def __init__(
        self,
        dir_name: str | os.PathLike,
        worker_name: str | None = None,
        gzip: bool = False,
        meta: dict | None = None,
        naming: Naming | None = None,
        force: bool = False,
        after_cycle: Callable[[Artifacts, object], None] | None = None,
    ) -> None:
        self.dir = Path(dir_name)
        self.created = make_folder(self.dir)  # up front: an unwritable folder fails first
        self.gzip = gzip
        self.force = force
        self.meta = dict(meta or {})
        self.naming = naming or tensorboard_naming(worker_name)
        self.written: list[Artifacts] = []
        self.renamed: list[tuple[Path, Path]] = []
        self.closed = False
        #: called with each cycle's published artifacts and the profiler (e.g. to explain
        #: them): capture itself never reads a trace back, so whatever reads it comes from
        #: outside
        self.after_cycle = after_cycle
        #: the machine's load over each cycle (read at each export): a contended CPU
        #: makes every op slow, and the capture grade must know it
        self.load = LoadMeter()

    def __call__(self, prof) -> None:
        if self.closed:
            return
        torch = require_torch()
        on_device = torch.profiler.ProfilerActivity.CUDA in prof.activities
        # cycles count from 1, as the file names (`_cycle2`) and the table header do
        cycle = len(self.written) + 1
        trace_name, table_name = self.naming(cycle)
        if self.gzip:
            trace_name += ".gz"
        progress.stage(f"exporting the trace of cycle {cycle}: {self.dir / trace_name}")
        meta = {**self._profiler_meta(torch, prof), **self.meta, "cycle": cycle}
        if (load := self.load.reading()) is not None:
            meta["machine_load"] = load
        with staged(self.dir, ".txt") as table_tmp, staged(self.dir, ".json") as trace_tmp:
            # the table first: in torch 2.13 key_averages() after an export can read freed names
            write_table(prof, table_tmp, on_device, meta)
            write_trace(prof, trace_tmp, meta, self.gzip)
            wanted = self.dir / trace_name
            trace, table = publish(
                [(trace_tmp, wanted), (table_tmp, self.dir / table_name)], self.force
            )
        self.written.append(Artifacts(trace, table))
        if trace != wanted:
            self.renamed.append((wanted, trace))
        if self.after_cycle is not None:
            self.after_cycle(self.written[-1], prof)

    def close(self, failed: bool = False) -> None:
        """No more cycles after a failure; a run that wrote nothing leaves no empty folder."""
        if failed:
            self.closed = True
        if not self.written:
            remove_empty_folders(self.created)

    @staticmethod
    def _profiler_meta(torch, prof) -> dict:
        return {
            "kinetoscope_version": __version__,
            "torch_version": torch.__version__,
            "activities": sorted(str(a).rsplit(".", 1)[-1] for a in prof.activities),
            "record_shapes": bool(prof.record_shapes),
            "profile_memory": bool(prof.profile_memory),
            "with_stack": bool(prof.with_stack),
            "written_at": datetime.datetime.now(datetime.timezone.utc).isoformat(),
        }


class Profile:
    """`with kinetoscope.profile(out=...) as prof: ... prof.step()`: torch.profiler with
    kinetoscope's defaults (schedule 1/1/3/1, CPU + GPU activities when a GPU is used)
    writing kinetoscope's artifacts. `prof.written` lists them after each cycle;
    `prof.profiler` is the underlying `torch.profiler.profile`."""

    def __init__(
        self,
        out: str | os.PathLike = "traces/run",
        steps: int | tuple | Schedule | None = None,
        *,
        device: str | DeviceChoice = "auto",
        record_shapes: bool = False,
        profile_memory: bool = False,
        with_stack: bool = False,
        gzip: bool = False,
        worker_name: str | None = None,
        meta: dict | None = None,
        naming: Naming | None = None,
        force: bool = False,
        after_cycle: Callable[[Artifacts, object], None] | None = None,
        quiet: NoiseFilter | None = None,
    ) -> None:
        torch = require_torch()
        # Kineto's USDT start/stop lines filtered here too, for the callbacks and
        # `kinetoscope.profile` as for the CLI: a filter of our own is open while profiling
        self._own_quiet = quiet is None
        self.quiet = quiet or NoiseFilter()
        self.steps = 0
        self._next_report = 0.0
        self.schedule = Schedule.of(steps)
        self.device = device if isinstance(device, DeviceChoice) else resolve_device(torch, device)
        run_meta = {
            "device": self.device.as_meta(),
            "schedule": self.schedule.as_meta(),
            **(meta or {}),
        }
        self.handler = TraceHandler(out, worker_name, gzip, run_meta, naming, force, after_cycle)
        self.profiler = torch.profiler.profile(
            activities=activities(torch, self.device),
            schedule=self.schedule.to_torch(torch),
            on_trace_ready=self.handler,
            record_shapes=record_shapes,
            profile_memory=profile_memory,
            with_stack=with_stack,
        )
        torch_schedule = self.schedule.to_torch(torch)
        self._switches = {
            n for n in range(1, self.schedule.total_steps + 2) if switches_at(torch_schedule, n)
        }

    @property
    def written(self) -> list[Artifacts]:
        return self.handler.written

    def step(self) -> None:
        """Mark the end of one iteration (the schedule counts these)."""
        self.steps += 1
        # inside the profiled window: at most 4 progress updates a second (one costs
        # ~3 us, a 64x64 matmul step ~30 us), and fd 2 redirected only on the steps
        # where the profiler starts or stops
        now = time.monotonic()
        if now >= self._next_report:
            self._next_report = now + 0.25
            total = self.schedule.total_steps
            progress.count(f"profiling: step {self.steps} of {total}", self.steps, total)
        if self.steps in self._switches:
            with self.quiet.around(), inductor_left_unimported():
                self.profiler.step()
        else:
            self.profiler.step()

    def __enter__(self) -> Profile:
        progress.stage(f"profiling: {self.schedule.total_steps} steps")
        if self._own_quiet:
            self.quiet.open()
        with self.quiet.around(), inductor_left_unimported():
            self.profiler.__enter__()
        return self

    def __exit__(self, *exc) -> None:
        failed = exc[0] is not None
        if failed:  # stopping the profiler would hand a cut-short cycle to the handler
            self.handler.closed = True
        try:
            with self.quiet.around():
                self.profiler.__exit__(*exc)
        finally:
            if self._own_quiet:
                self.quiet.close()
            self.handler.close(failed)


def switches_at(schedule, n: int) -> bool:
    """Whether the `n`-th `step()` call (from 1) changes torch's profiler state: its
    action for the new step number differs, or the last step's RECORD_AND_SAVE ends a
    cycle (torch.profiler.profile.step: step_num += 1, then _transit_action)."""
    before = schedule(n - 1)
    return schedule(n) != before or before == type(before).RECORD_AND_SAVE


def profile(out: str | os.PathLike = "traces/run", steps=None, **options) -> Profile:
    """Profile a loop with kinetoscope's defaults; see `Profile` for the options.

    `steps` is the number of active steps, a `(wait, warmup, active[, repeat])`
    tuple or a `Schedule`; the default is 1/1/3/1.
    """
    return Profile(out, steps, **options)
