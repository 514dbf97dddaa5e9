"""Where `TraceBuilder` puts the column parts of each batch: in memory or in files.

Both sinks have one small interface: `append(key, array)` once per batch and
`column(key, dtype)` once at the end, which hands back the whole column.

- `MemoryParts` keeps the parts in lists and concatenates them (the default).
- `SpillParts` (the out-of-core path, `--max-memory`) writes each part to the end
  of one file per column in a private directory made by `tempfile.mkdtemp`, and
  maps the finished files back as numpy arrays (`np.memmap`). Nothing is
  concatenated, so there is no second copy at the end; and the pages of a mapped
  file are file-backed: under memory pressure the kernel writes them back and
  drops them instead of needing RAM (or swap) for them. `close()` removes the
  directory; on POSIX a mapped file that is unlinked stays readable until its
  last mapping goes, so the arrays outlive the directory and the disk space is
  returned when the `Trace` is collected.

The builder never knows which sink it has: the same code builds the same
columns either way, which is why both paths give identical results.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from typing import BinaryIO

import numpy as np


class MemoryParts:
    """Column parts held in lists; `column` concatenates them."""

    spilled = False

    def __init__(self) -> None:
        self.parts: dict[str, list[np.ndarray]] = {}

    def append(self, key: str, array: np.ndarray) -> None:
        self.parts.setdefault(key, []).append(array)

    def column(self, key: str, dtype, width: int | None = None) -> np.ndarray:
        """The whole column (the parts are released); empty where nothing came."""
        parts = self.parts.pop(key, [])
        if parts:
            return np.concatenate(parts)
        return np.zeros((0, width) if width else 0, dtype)

    def close(self) -> None:
        self.parts.clear()


class SpillParts:
    """Column parts appended to files in a private temporary directory."""

    spilled = True

    def __init__(self, spill_dir: str | os.PathLike | None = None) -> None:
        self.dir = tempfile.mkdtemp(prefix="kinetoscope-", dir=spill_dir)
        self.files: dict[str, BinaryIO] = {}
        self.dtypes: dict[str, np.dtype] = {}

    def append(self, key: str, array: np.ndarray) -> None:
        handle = self.files.get(key)
        if handle is None:
            handle = self.files[key] = open(os.path.join(self.dir, key), "wb")  # noqa: SIM115
            self.dtypes[key] = array.dtype
        if array.dtype != self.dtypes[key]:  # one dtype per file, as concatenate would give
            raise TypeError(f"column {key!r}: {array.dtype} after {self.dtypes[key]}")
        handle.write(np.ascontiguousarray(array).data)

    def column(self, key: str, dtype, width: int | None = None) -> np.ndarray:
        """The whole column, mapped from its file (writable: the loader fixes
        durations and folds flow ids into correlations in place)."""
        handle = self.files.pop(key, None)
        if handle is None:
            return np.zeros((0, width) if width else 0, dtype)
        handle.close()
        dtype = self.dtypes.pop(key)
        if os.path.getsize(handle.name) == 0:  # an empty file cannot be mapped
            return np.zeros((0, width) if width else 0, dtype)
        mapped = np.memmap(handle.name, dtype=dtype, mode="r+")
        array = np.asarray(mapped)  # a plain ndarray view: no memmap subclass downstream
        return array.reshape(-1, width) if width else array

    def close(self) -> None:
        """Close what is still open and remove the directory (mapped columns stay
        readable); safe to call twice, and after an error at any point."""
        for handle in self.files.values():
            handle.close()
        self.files.clear()
        shutil.rmtree(self.dir, ignore_errors=True)
