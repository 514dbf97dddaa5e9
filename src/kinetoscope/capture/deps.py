"""Import the optional heavy dependencies of capture, or fail with one actionable line.

torch and transformers are extras (`kinetoscope[capture]`, `kinetoscope[llm]`):
the analyzer installs and runs without them, so every capture entry point asks
for them here, at the moment it needs them, never at import time.
"""

from __future__ import annotations

import importlib
from types import ModuleType

from ..errors import UsageError


class MissingDependency(UsageError):
    """An optional dependency needed for this command is not installed (exit 2)."""


def _require(module: str, extra: str, purpose: str) -> ModuleType:
    try:
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
