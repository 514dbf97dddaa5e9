"""Arguments only some events carry, by event index, as compact read-only mappings.

`Input Dims`, `Input type`, `flops` and `bytes` are kept for the events that
have them. A dict of Python strings costs about 150-200 bytes an entry (key,
value object, hash slot), several times the ~42 bytes of an event's columns, so
for a `record_shapes=True` trace these dicts were most of the memory. Here they
are sorted index arrays plus one value array (numbers) or one UTF-8 blob with
end offsets (texts): columns like the others, which the out-of-core loader can
keep in files (`spill.py`). They behave as the dicts did (`get`, `[]`, `in`,
`items()` in event order, `len`, truth), so every analysis reads them unchanged.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

import numpy as np


def _position(index: np.ndarray, event: Any) -> int:
    """Where `event` sits in the sorted `index`, or -1."""
    try:
        key = int(event)
    except (TypeError, ValueError):
        return -1
    pos = int(np.searchsorted(index, key))
    return pos if pos < len(index) and int(index[pos]) == key else -1


class SparseTexts(Mapping):
    """event index -> text; `index` ascending, text k is `blob[ends[k-1]:ends[k]]`."""

    def __init__(self, index: np.ndarray, ends: np.ndarray, blob: np.ndarray) -> None:
        self.index, self.ends, self.blob = index, ends, blob

    @classmethod
    def encode(cls, texts: list[str]) -> tuple[np.ndarray, np.ndarray]:
        """(lengths, bytes) of one batch's texts, for `SparseTexts` to be built from.
        `surrogatepass` keeps any lone surrogate a JSON escape produced, exactly."""
        encoded = [t.encode("utf-8", "surrogatepass") for t in texts]
        lengths = np.fromiter(map(len, encoded), np.int64, len(encoded))
        return lengths, np.frombuffer(b"".join(encoded), np.uint8)

    def _text(self, pos: int) -> str:
        start = int(self.ends[pos - 1]) if pos else 0
        return self.blob[start : int(self.ends[pos])].tobytes().decode("utf-8", "surrogatepass")

    def __getitem__(self, event: Any) -> str:
        pos = _position(self.index, event)
        if pos < 0:
            raise KeyError(event)
        return self._text(pos)

    def __iter__(self) -> Iterator[int]:
        return iter(self.index.tolist())

    def __len__(self) -> int:
        return len(self.index)

    def items(self):  # one pass in order, not a lookup per key
        return list(zip(self.index.tolist(), map(self._text, range(len(self))), strict=True))


class SparseValues(Mapping):
    """event index -> number; `index` ascending, `values` float64 or int64."""

    def __init__(self, index: np.ndarray, values: np.ndarray) -> None:
        self.index, self.values = index, values

    def __getitem__(self, event: Any):
        pos = _position(self.index, event)
        if pos < 0:
            raise KeyError(event)
        return self.values[pos].item()

    def __iter__(self) -> Iterator[int]:
        return iter(self.index.tolist())

    def __len__(self) -> int:
        return len(self.index)

    def items(self):
        return list(zip(self.index.tolist(), self.values.tolist(), strict=True))


def values_at(table: Mapping[int, Any], events: Any) -> list[Any]:
    """The values `table` holds for `events`, in their order, absent ones left out: one
    binary search over a `SparseValues` index for all of them instead of a lookup per
    event (a dict, as tests build, is read key by key)."""
    if not isinstance(table, SparseValues):
        return [table[i] for i in events if i in table]
    index = table.index
    events = np.asarray(events, dtype=np.int64)
    if not len(index) or not len(events):
        return []
    pos = np.minimum(np.searchsorted(index, events), len(index) - 1)
    return table.values[pos[index[pos] == events]].tolist()
