"""One cache entry: a built `Trace` written to a folder, and mapped back from it.

An entry is a folder holding one `.npy` file per numpy column (events, launch
configurations, allocator events, the sparse arguments' index/offset/blob arrays)
and `meta.bin`: everything else (interned names, lanes, devices, metadata, the
loader's warnings, each array's dtype and shape) as msgpack, behind a blake2b
digest of itself. Reading maps each column (`np.load(mmap_mode="c")`: pages come
from the file on first touch, and a write, which no analysis makes, would stay
private to the process), so a warm load costs the pages an analysis reads, not a
parse; and the out-of-core path gets file-backed columns as its spill gives.

`write` refuses (returns False) a Trace it cannot give back exactly: one whose
sparse mappings are plain dicts (built in tests), or whose metadata does not
survive msgpack unchanged (a tuple, a NaN, a lone surrogate). `read` raises
`CorruptEntry` for anything it cannot trust: a wrong digest, another key, a
missing, truncated or mistyped column.
"""

from __future__ import annotations

import dataclasses
import hashlib
import os
from typing import Any

import msgspec
import numpy as np

from .model import Device, KernelArgs, Lane, MemoryEvents, Trace, TraceMeta
from .sparse import SparseTexts, SparseValues

#: layout of an entry; a change here makes every older entry foreign
FORMAT = 2
META = "meta.bin"
_DIGEST = 32
#: event columns of the Trace, stored under their own names
_EVENT_COLUMNS = (
    "ts",
    "dur",
    "name_id",
    "cat",
    "lane",
    "is_instant",
    "external_id",
    "correlation",
)


class CorruptEntry(Exception):
    """The entry cannot be read back as the Trace that was written (says why)."""


def _arrays(trace: Trace) -> dict[str, np.ndarray] | None:
    """Every numpy array of `trace` by file name; None when a sparse table is not
    the loader's columnar kind (a dict in a built Trace has no columns to store)."""
    out = {name: getattr(trace, name) for name in _EVENT_COLUMNS}
    for group in (trace.kernel_args, trace.memory):
        for f in dataclasses.fields(group):
            out[f"{type(group).__name__}.{f.name}"] = getattr(group, f.name)
    for name in _sparse_fields():
        table = getattr(trace, name)
        if isinstance(table, SparseTexts):
            out |= {
                f"{name}.index": table.index,
                f"{name}.ends": table.ends,
                f"{name}.blob": table.blob,
            }
        elif isinstance(table, SparseValues):
            out |= {f"{name}.index": table.index, f"{name}.values": table.values}
        else:
            return None
    return out


def _sparse_fields() -> list[str]:
    """The Trace's per-event argument tables (its `Mapping[int, ...]` fields), read from
    the class, so a table the loader gains is stored without a list here to update."""
    return [f.name for f in dataclasses.fields(Trace) if str(f.type).startswith("Mapping[int")]


def _plain(trace: Trace) -> dict[str, Any]:
    """The Trace's non-array parts as msgpack-able data."""
    return {
        "names": trace.names,
        "meta": dataclasses.asdict(trace.meta),
        "lanes": [list(dataclasses.astuple(lane)) for lane in trace.lanes],
        "devices": [list(dataclasses.astuple(device)) for device in trace.devices],
        "warnings": trace.warnings,
    }


def entry_bytes(trace: Trace) -> int:
    """Bytes the columns of `trace` take in an entry (the metadata is small beside them)."""
    arrays = _arrays(trace)
    return sum(a.nbytes for a in arrays.values()) if arrays is not None else 0


def write(folder: str, trace: Trace, key: str) -> bool:
    """Write `trace` into the existing, empty `folder` under `key`; False (nothing
    worth keeping written) when the Trace would not read back exactly. OSError
    (read-only or full disk) propagates: the caller drops the folder."""
    arrays = _arrays(trace)
    if arrays is None:
        return False
    plain = _plain(trace)
    try:
        encoded = msgspec.msgpack.encode(plain)
    except (TypeError, ValueError, UnicodeEncodeError, OverflowError):
        return False
    # a tuple (back as a list), a NaN (never equal to itself): not exact, not cached
    if msgspec.msgpack.decode(encoded) != plain:
        return False
    shapes = {}
    for name, array in arrays.items():
        np.save(os.path.join(folder, f"{name}.npy"), np.ascontiguousarray(array))
        shapes[name] = [array.dtype.str, list(array.shape)]
    body = msgspec.msgpack.encode(
        {"format": FORMAT, "key": key, "arrays": shapes, "plain": encoded}
    )
    with open(os.path.join(folder, META), "wb") as handle:
        handle.write(hashlib.blake2b(body, digest_size=_DIGEST).digest() + body)
    return True


def read(folder: str, key: str, path: str) -> Trace:
    """The Trace stored in `folder` under `key`, columns mapped; `path` is what this
    load calls the file (as the loader names it). Raises `CorruptEntry`."""
    try:
        with open(os.path.join(folder, META), "rb") as handle:
            data = handle.read()
    except OSError as exc:
        raise CorruptEntry(f"no readable {META} ({exc.strerror or exc})") from None
    digest, body = data[:_DIGEST], data[_DIGEST:]
    if len(digest) < _DIGEST or hashlib.blake2b(body, digest_size=_DIGEST).digest() != digest:
        raise CorruptEntry(f"{META} does not match its digest")
    try:
        head = msgspec.msgpack.decode(body)
        if head["format"] != FORMAT or head["key"] != key:
            raise CorruptEntry("written for another trace or format")
        plain = msgspec.msgpack.decode(head["plain"])
        arrays = {name: _column(folder, name, *spec) for name, spec in head["arrays"].items()}
        return _trace(path, plain, arrays)
    except CorruptEntry:
        raise
    except Exception as exc:  # noqa: BLE001 - any damage reads as an entry not to trust
        raise CorruptEntry(f"{type(exc).__name__}: {exc}") from None


def _column(folder: str, name: str, dtype: str, shape: list[int]) -> np.ndarray:
    """One column, mapped (an empty one read: a zero-length map is refused), checked
    against the dtype and shape the metadata recorded."""
    file = os.path.join(folder, f"{name}.npy")
    array = np.load(file, mmap_mode=None if 0 in shape else "c", allow_pickle=False)
    if array.dtype.str != dtype or list(array.shape) != shape:
        raise CorruptEntry(f"{name}.npy is {array.dtype.str} {array.shape}, not {dtype} {shape}")
    return np.asarray(array)  # a plain ndarray view of the map, as the spill gives


def _trace(path: str, plain: dict[str, Any], arrays: dict[str, np.ndarray]) -> Trace:
    def group(cls):
        return cls(*(arrays[f"{cls.__name__}.{f.name}"] for f in dataclasses.fields(cls)))

    tables = {}
    for name in _sparse_fields():
        if f"{name}.blob" in arrays:
            ends, blob = arrays[f"{name}.ends"], arrays[f"{name}.blob"]
            tables[name] = SparseTexts(arrays[f"{name}.index"], ends, blob)
        else:
            tables[name] = SparseValues(arrays[f"{name}.index"], arrays[f"{name}.values"])
    return Trace(
        path=path,
        meta=TraceMeta(**plain["meta"]),
        names=plain["names"],
        **{name: arrays[name] for name in _EVENT_COLUMNS},
        lanes=[Lane(*row) for row in plain["lanes"]],
        devices=[Device(*row) for row in plain["devices"]],
        kernel_args=group(KernelArgs),
        memory=group(MemoryEvents),
        warnings=plain["warnings"],
        **tables,
    )
