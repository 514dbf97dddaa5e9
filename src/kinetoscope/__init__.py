"""kinetoscope: profile PyTorch programs and read Kineto traces like an expert."""

from .errors import KinetoscopeError, TraceError
from .trace import Trace, load

__version__ = "0.1.0"

__all__ = ["KinetoscopeError", "Trace", "TraceError", "__version__", "load"]
