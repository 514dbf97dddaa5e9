"""kinetoscope: profile PyTorch programs and read Kineto traces like an expert."""

from ._version import __version__
from .api import explain
from .errors import KinetoscopeError, TraceError, UsageError
from .report.model import Report
from .trace import Trace, load
from .tune.knob import knob

__all__ = [
    "KinetoscopeError",
    "Report",
    "Trace",
    "TraceError",
    "UsageError",
    "__version__",
    "explain",
    "knob",
    "load",
    "profile",
    "trace_handler",
]

#: Capture entry points, imported on first use so that `import kinetoscope` never imports torch.
_CAPTURE = ("profile",)


def __getattr__(name: str):
    if name == "trace_handler":  # the handler that also explains each cycle
        from .integrations.handler import trace_handler

        return trace_handler
    if name in _CAPTURE:
        from .capture import session

        return getattr(session, name)
    raise AttributeError(f"module 'kinetoscope' has no attribute {name!r}")
