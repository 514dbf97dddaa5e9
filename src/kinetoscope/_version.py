"""The version, in one place: pyproject.toml reads it from here (hatch's `[tool.hatch.version]`),
the package root re-exports it, and every module that stamps it imports it from here, so no
module needs the package root while the root is still initialising."""

__version__ = "0.1.0"
