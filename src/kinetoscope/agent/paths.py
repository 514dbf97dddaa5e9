"""Which files an agent may make kinetoscope read or write: regular files under the root.

An agent's arguments are untrusted: a path may be absolute, climb out with `..`,
or be a symlink that points out of the root; a FIFO would block a read forever
and a device file would stream without end. A hard link names the same file as a
name outside the root may (the link count says there is another name, not where), so
a regular file with more than one link is refused too. Each is refused with one line
before anything is opened.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

from ..errors import UsageError
from ..report.console import inert


def _inside(root: Path, path: Path) -> bool:
    return os.path.commonpath([root, path]) == str(root)


def readable(root: Path, name: str) -> Path:
    """The real path of `name` (relative to `root`, or absolute) if it is a regular file
    under `root` once every symlink is followed; otherwise UsageError."""
    shown = inert(name)
    real = Path(os.path.realpath(root / name))
    if not _inside(root, real):
        raise UsageError(f"{shown}: outside the served root {inert(str(root))}")
    try:
        info = os.stat(real)
    except FileNotFoundError:
        raise UsageError(f"{shown}: no such file") from None
    except OSError as exc:
        raise UsageError(f"{shown}: cannot be read ({exc.strerror})") from None
    if not stat.S_ISREG(info.st_mode):
        raise UsageError(f"{shown}: not a regular file (a folder, FIFO or device is never read)")
    if info.st_nlink > 1:
        raise UsageError(
            f"{shown}: has {info.st_nlink} hard links; one may be outside the served root "
            "(copy the file to read it)"
        )
    return real


def writable(root: Path, name: str) -> Path:
    """Where a new output `name` may go: its folder is under `root` (symlinks followed)
    and exists; the file itself must not be a symlink (it could point out)."""
    shown = inert(name)
    target = root / name
    folder = Path(os.path.realpath(target.parent))
    if not _inside(root, folder):
        raise UsageError(f"{shown}: outside the served root {inert(str(root))}")
    if not folder.is_dir():
        raise UsageError(f"{shown}: folder does not exist")
    if (folder / target.name).is_symlink():
        raise UsageError(f"{shown}: is a symlink; outputs are written to new files only")
    return folder / target.name
