"""kinetoscope: profile PyTorch programs and read Kineto traces like an expert."""

from .api import explain
from .errors import KinetoscopeError, TraceError, UsageError
from .report.model import Report
from .trace import Trace, load

__version__ = "0.1.0"

__all__ = [
    "KinetoscopeError",
    "Report",
    "Trace",
    "TraceError",
    "UsageError",
    "__version__",
    "explain",
    "load",
]
