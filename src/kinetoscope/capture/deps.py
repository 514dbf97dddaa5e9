"""Import the optional heavy dependencies of capture, or fail with one actionable line.

torch and transformers are extras (`kinetoscope[capture]`, `kinetoscope[llm]`):
the analyzer installs and runs without them, so every capture entry point asks
for them here, at the moment it needs them, never at import time.
"""

from __future__ import annotations

import importlib
import signal
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
