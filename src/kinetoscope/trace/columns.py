"""Turning decoded event fields into numpy columns: ids, floats, interned keys.

Kineto writes ids as ints or strings, pid/tid as either, and numbers that may be
missing; these helpers give every batch the same dtypes, and `LaneIds` maps
(pid, tid) pairs to lane numbers across batches (and across the split loader's
two processes).
"""

from __future__ import annotations

import math
from itertools import compress, repeat
from operator import attrgetter, is_, is_not
from typing import Any

import msgspec
import numpy as np

from .schema import as_float, as_int

#: lane keys come from these event fields
PID, TID = attrgetter("pid"), attrgetter("tid")
MAX_LANE_TABLE = 1 << 20  # (pid, tid) cells before lanes are interned as tuples instead


def id_column(values: list[Any]) -> np.ndarray:
    """int64 column of id-like values; None (explicit null) and junk become -1."""
    try:
        return np.array(values, dtype=np.int64)
    except (TypeError, ValueError, OverflowError):
        return np.array([in_int64(as_int(v)) for v in values], np.int64)


def float_column(values: list[Any]) -> np.ndarray:
    """float64 column; None, values that are not numbers and integers beyond a float's
    range become NaN."""
    try:
        return np.array([math.nan if v is None else v for v in values], dtype=np.float64)
    except (TypeError, ValueError, OverflowError):
        return np.array([as_float(v) for v in values], np.float64)


def in_int64(value: int) -> int:
    return value if -(2**63) <= value < 2**63 else -1


def intern_keys(table: dict[Any, int], keys: list[Any]) -> list[int]:
    """Ids of `keys` in `table`, new keys numbered in order of first appearance.

    Lookups and the scan for misses run in C (`map`, `compress`), not per key
    in Python: after the first batch nearly every key is a hit."""
    ids = list(map(table.get, keys))
    if None in ids:
        for key in dict.fromkeys(compress(keys, map(is_, ids, repeat(None)))):
            table[key] = len(table)
        ids = list(map(table.get, keys))
    return ids


def intern_column(table: dict[Any, int], keys: list[Any], dtype: Any = np.int32) -> np.ndarray:
    """`intern_keys` as a numpy column, filled straight from the lookups: a miss reads
    as -1 (no id is negative), so no list of ids and no scan for None is built."""
    n = len(keys)
    ids = np.fromiter(map(table.get, keys, repeat(-1, n)), dtype, n)
    if n and (ids < 0).any():
        for key in dict.fromkeys(compress(keys, (ids < 0).tolist())):
            table[key] = len(table)
        ids = np.fromiter(map(table.get, keys), dtype, n)
    return ids


def present_mask(values: list[Any]) -> np.ndarray:
    """Positions of the values that are not None."""
    return np.flatnonzero(np.fromiter(map(is_not, values, repeat(None)), bool, len(values)))


def canonical_key(value: Any) -> Any:
    """A pid or tid written as digits is the same thread as the number: 2021 traces
    give ops `"tid": "25738"` and their `[memory]` instants `"tid": 25738`."""
    return int(value) if type(value) is str and value.isdigit() else value


class LaneIds:
    """Interns (pid, tid) pairs as lane ids, numbered in order of first appearance.

    pid and tid are interned apart (no tuple per event), then looked up together
    in a small (pid, tid) -> lane table; spellings of one thread share a lane."""

    def __init__(self) -> None:
        self.keys: dict[tuple[Any, Any], int] = {}  # (pid, tid) -> lane id
        self.pids: dict[Any, int] = {}
        self.tids: dict[Any, int] = {}
        self.table = np.full((0, 0), -1, np.int32)  # [pid id, tid id] -> lane id

    def __call__(self, events: list[Any]) -> np.ndarray:
        pid = intern_column(self.pids, list(map(PID, events)), np.intp)
        tid = intern_column(self.tids, list(map(TID, events)), np.intp)
        if len(self.pids) * len(self.tids) > MAX_LANE_TABLE:  # many processes and threads
            keys = [
                (canonical_key(p), canonical_key(t))
                for p, t in zip(map(PID, events), map(TID, events), strict=True)
            ]
            return np.array(intern_keys(self.keys, keys), np.int32)
        table = self.table
        if table.shape[0] < len(self.pids) or table.shape[1] < len(self.tids):
            table = np.full((len(self.pids) * 2, len(self.tids) * 2), -1, np.int32)
            table[: self.table.shape[0], : self.table.shape[1]] = self.table
            self.table = table
        lane = table[pid, tid]
        new = np.flatnonzero(lane < 0)
        if len(new):
            _, first = np.unique(pid[new] * table.shape[1] + tid[new], return_index=True)
            pid_values, tid_values = list(self.pids), list(self.tids)
            for i in new[np.sort(first)].tolist():  # new pairs, in order of appearance
                key = (canonical_key(pid_values[pid[i]]), canonical_key(tid_values[tid[i]]))
                table[pid[i], tid[i]] = self.keys.setdefault(key, len(self.keys))
            lane = table[pid, tid]
        return lane

    def merge(self, keys: list[tuple[Any, Any]]) -> np.ndarray:
        """Ids here of another interner's keys (listed in its id order), adding new ones."""
        return np.array([self.keys.setdefault(k, len(self.keys)) for k in keys] or [0], np.int32)


def json_text(value: Any) -> str:
    """JSON text of an argument kept undecoded (Raw) or decoded leniently."""
    if type(value) is msgspec.Raw:
        return str(value, "utf-8", "replace")
    return msgspec.json.encode(value).decode("utf-8", "replace")
