"""Import the optional heavy dependencies of capture, or fail with one actionable line.

torch and transformers are extras (`kinetoscope[capture]`, `kinetoscope[llm]`):
the analyzer installs and runs without them, so every capture entry point asks
for them here, at the moment it needs them, never at import time.
"""

from __future__ import annotations

import importlib
import os
import signal
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from types import ModuleType

from ..errors import UsageError


class MissingDependency(UsageError):
    """An optional dependency needed for this command is not installed (exit 2)."""


@contextmanager
def _interrupts_deferred() -> Iterator[None]:
    """A Ctrl-C during the import is held until the import is done, then delivered.

    torch's import runs Python inside pybind11 C++ callbacks; a KeyboardInterrupt
    raised there cannot unwind through the C++ frame and aborts the process
    (`terminate called after throwing ... KeyboardInterrupt`, exit -6: 1 of 10 runs
    interrupted at random moments). Held, it reaches Python code, where the CLI
    turns it into its one line and exit 130."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    held: list[int] = []
    previous = signal.signal(signal.SIGINT, lambda signum, _frame: held.append(signum))
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)
    if held:
        signal.raise_signal(signal.SIGINT)


@contextmanager
def inductor_left_unimported() -> Iterator[None]:
    """Around torch.profiler's start of a cycle (`prepare_trace`): no import of
    torch._inductor for a program that has not imported it.

    `prepare_trace` asks `hasattr(torch, "_inductor")` to read Inductor's CUDA-graph
    setting, and torch answers by importing its lazy module: torch._inductor and
    torch._dynamo, about 2 s of CPU before the first profiled step, 40% of a CPU
    `profile` run or of a tune trial, for a program that never compiles. Until the
    program imports it the answer here is no, which leaves the setting at False, what
    Inductor's config would have read (TORCHINDUCTOR_CUDAGRAPHS=1 keeps torch's own
    question). A thread asking `torch._inductor` for the first time during these calls
    would be told it is missing."""
    torch = sys.modules.get("torch")
    lazy = getattr(torch, "_lazy_modules", None)
    if (
        "torch._inductor" in sys.modules
        or not isinstance(lazy, set)
        or "_inductor" not in lazy
        or os.environ.get("TORCHINDUCTOR_CUDAGRAPHS") == "1"
    ):
        yield
        return
    lazy.discard("_inductor")
    try:
        yield
    finally:
        lazy.add("_inductor")


def _require(module: str, extra: str, purpose: str) -> ModuleType:
    try:
        with _interrupts_deferred():
            return importlib.import_module(module)
    except ImportError:
        raise MissingDependency(
            f"{purpose} needs {module}, which is not installed: pip install 'kinetoscope[{extra}]'"
        ) from None


def require_torch() -> ModuleType:
    """The `torch` module; MissingDependency naming the `capture` extra otherwise."""
    return _require("torch", "capture", "profiling")


def require_transformers() -> ModuleType:
    """The `transformers` module; MissingDependency naming the `llm` extra otherwise."""
    return _require("transformers", "llm", "the transformer workload")
