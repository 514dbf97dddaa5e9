"""What record_shapes wrote about one op's arguments, decoded: shapes, dtypes, scalars.

The profiler records three parallel lists per op (record_shapes=True):
`Input Dims` (a tensor's sizes, `[]` for non-tensors), `Input type`
(`c10::BFloat16`, `float`, `Scalar`, `ScalarList`, ...) and, since torch 2.1,
`Concrete Inputs`: each scalar argument printed as text (`"[2, 2]"`,
`"True"`, `"0."`; `""` for tensors). Counting FLOPs needs all three: the
shapes of q/k/v or input/weight, their dtype, and the scalars that shape the
work (a convolution's stride and padding, attention's `is_causal`).
Positions are the op's schema order (`torch.ops.aten.<op>.default._schema`).
"""

from __future__ import annotations

import ast
import json
from dataclasses import dataclass

from ..trace import Trace

#: `Input type` of a floating tensor -> short dtype name used in the peak table
DTYPES = {"float": "fp32", "double": "fp64", "c10::Half": "fp16", "c10::BFloat16": "bf16"}
ITEMSIZE = {"fp32": 4, "tf32": 4, "fp64": 8, "fp16": 2, "bf16": 2}

#: marks "not recorded" in `RecordedArgs.scalar`, apart from a recorded None
MISSING = object()


def _json(text: str | None):
    try:
        return json.loads(text) if text else None
    except ValueError:
        return None


def _scalar(text: str):
    """One Concrete Input as a Python value: `"[2, 2]"` -> [2, 2], `"True"` -> True, `"0."` -> 0.0;
    text that is not a literal (a dtype, `"same"`) stays text."""
    try:
        return ast.literal_eval(text)
    except (ValueError, SyntaxError, MemoryError, RecursionError):
        return text


@dataclass(frozen=True)
class RecordedArgs:
    """The recorded arguments of one op event (each list empty where not recorded)."""

    dims: list
    types: list
    concrete: list

    def shape(self, position: int) -> list[int] | None:
        """Sizes of the tensor at `position`, None when absent or not a tensor."""
        if position >= len(self.dims):
            return None
        dims = self.dims[position]
        if not isinstance(dims, list) or not dims or not all(isinstance(d, int) for d in dims):
            return None
        return dims

    def dtype(self, position: int) -> str | None:
        """Short dtype name (fp32, bf16, ...) of the tensor at `position`, None otherwise."""
        if position >= len(self.types):
            return None
        return DTYPES.get(self.types[position])

    def scalar(self, position: int):
        """The Concrete Input at `position` as a value, MISSING where the trace has none."""
        if position >= len(self.concrete) or self.concrete[position] in ("", None):
            return MISSING
        return _scalar(str(self.concrete[position]))


def recorded_args(trace: Trace, index: int) -> RecordedArgs:
    """Decode the recorded argument lists of event `index` (empty lists where absent)."""
    lists = [
        _json(table.get(index))
        for table in (trace.input_dims, trace.input_types, trace.concrete_inputs)
    ]
    return RecordedArgs(*(v if isinstance(v, list) else [] for v in lists))


def numel(shape: list[int]) -> int:
    out = 1
    for d in shape:
        out *= d
    return out
