"""The Perfetto hand-off: a trace Perfetto imports whole, with kinetoscope's reading on it."""
