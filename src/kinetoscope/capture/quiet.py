"""Keep the profiler's own chatter out of the user's output, and nothing else.

Kineto (C++, inside torch) logs `USDT:<date> <pid>:<tid> SyncActivityProfilerHandler.cpp:52]
profiler_start` and `... profiler_stop` straight to file descriptor 2 each time a
profiling cycle starts and stops; Python's `sys.stderr` never sees them, so only
a redirect of fd 2 can. Around the profiler's own calls (start, step, stop) fd 2
points at a temporary file; after each call every line written there goes on to
the real stderr except those two markers, so a real warning still shows.

torch's `UserWarning: Profiler clears events at the end of each cycle` is a
Python warning: it fires on every run with `--repeat 2` or more, where clearing
between cycles is what kinetoscope wants (each cycle is its own file), so that
one warning is ignored by message; other warnings pass.
"""

from __future__ import annotations

import os
import re
import sys
import tempfile
import warnings
from contextlib import contextmanager, suppress

#: the two lines Kineto's SyncActivityProfilerHandler writes per cycle
NOISE = re.compile(rb"^USDT:.*\] profiler_(start|stop)\s*$")
#: torch.profiler's warning for repeat > 1 (its text starts with "Warning: ")
CLEARS_EVENTS = ".*Profiler clears events at the end of each cycle"


class NoiseFilter:
    """While open, `around()` blocks (the profiler's start, step and stop) write fd 2 into
    a temporary file; after each, its lines less `NOISE` go to the real stderr at once.
    Only those calls are redirected, so a script's own stderr (a tqdm bar) stays live;
    each costs two `dup2` calls and an `fstat`, plus a read where something was written."""

    def __init__(self) -> None:
        self.saved: int | None = None
        self.held = None

    def open(self) -> None:
        try:
            sys.stderr.flush()
            self.saved = os.dup(2)
        except (AttributeError, OSError, ValueError):  # no real fd 2: nothing to filter
            return
        self.held = tempfile.TemporaryFile()  # noqa: SIM115 - closed by close()

    def close(self) -> None:
        if self.saved is not None:
            os.close(self.saved)
            self.held.close()
            self.saved = self.held = None

    @contextmanager
    def around(self):
        if self.saved is None:
            yield
            return
        _flush()
        os.dup2(self.held.fileno(), 2)
        try:
            yield
        finally:
            _flush()
            os.dup2(self.saved, 2)
            if os.fstat(self.held.fileno()).st_size:
                self._pass_on()

    def _pass_on(self) -> None:
        """Write the held lines, less the noise, to stderr; empty the file."""
        self.held.seek(0)
        kept = b"".join(line for line in self.held if not NOISE.match(line))
        self.held.seek(0)
        self.held.truncate()
        view = memoryview(kept)
        while view:
            view = view[os.write(2, view) :]


def _flush() -> None:
    with suppress(AttributeError, OSError, ValueError):
        sys.stderr.flush()


@contextmanager
def noise_filtered():
    """A `NoiseFilter` for the block, with torch's clears-events warning ignored."""
    quiet = NoiseFilter()
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=CLEARS_EVENTS, category=UserWarning)
        quiet.open()
        try:
            yield quiet
        finally:
            quiet.close()
