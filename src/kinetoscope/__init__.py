"""kinetoscope: profile PyTorch programs and read Kineto traces like an expert."""

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


#: Reader entry points and the version, imported on first use so that `import kinetoscope`
#: stays light: the console entry (`kinetoscope.entry`) holds a Ctrl-C from its first line,
#: and until then one is the interpreter's traceback (one in 80 sent 3-48 ms into
#: `explain` landed on the version's import here).
_LAZY = {
    "__version__": ("_version", "__version__"),
    "KinetoscopeError": ("errors", "KinetoscopeError"),
    "TraceError": ("errors", "TraceError"),
    "UsageError": ("errors", "UsageError"),
    "explain": ("api", "explain"),
    "Report": ("report.model", "Report"),
    "Trace": ("trace", "Trace"),
    "load": ("trace", "load"),
    "knob": ("tune.knob", "knob"),
}


def __getattr__(name: str):
    if name in _LAZY:
        import importlib

        module, attribute = _LAZY[name]
        return getattr(importlib.import_module(f".{module}", __name__), attribute)
    if name == "trace_handler":  # the handler that also explains each cycle
        from .integrations.handler import trace_handler

        return trace_handler
    if name in _CAPTURE:
        from .capture import session

        return getattr(session, name)
    raise AttributeError(f"module 'kinetoscope' has no attribute {name!r}")
