"""Pictures written like every other output file: `save_figure`.

A renderer draws a matplotlib figure (report/: the `report.plotting` set-up, Agg,
one DPI); the command that asked for it writes it here, through `write_file` (temp
file + rename, never over an input, never over an earlier file unless `force`).
Only `fig.savefig` and `plt.close` are called, so this module imports no matplotlib.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from .outputs import write_file


def save_figure(
    plt, fig, paths: Iterable[Path], force: bool = False, inputs: Iterable[Path] = ()
) -> list[tuple[Path, Path]]:
    """Write `fig` to each of `paths` (format from the extension, at the figure's own
    DPI), then close it; (wanted, written) pairs."""
    inputs, out = list(inputs), []
    try:
        for path in map(Path, paths):
            fmt = path.suffix.lstrip(".").lower()
            save = lambda f, e=fmt: fig.savefig(f, format=e)  # noqa: E731
            out.append((path, write_file(path, save, force=force, inputs=inputs)))
    finally:
        plt.close(fig)
    return out
