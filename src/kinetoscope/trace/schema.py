"""What Kineto JSON is decoded into: typed msgspec `Event`/`Args` structs holding
only the fields the analyses use (strict, and a lenient twin for files with
unexpected value types), the top-level object, and the coercions that give the
lenient events the strict types.
"""

from __future__ import annotations

import math
from typing import Any

import msgspec

from .utf8 import StrictDecoder

# (attribute, JSON key, strict type, default). Ids and counters default to -1
# (absent) so the loader can read them column-wise without testing for None.
# The lenient decoder, used only when the strict one meets an unexpected value
# type, takes the same keys as `Any`, and `normalize_lenient` coerces them.
ARG_FIELDS: list[tuple[str, str, Any, Any]] = [
    ("external_id", "External id", int | None, -1),
    ("external_id_old", "external id", int | None, -1),
    ("correlation", "correlation", int | None, -1),
    ("stream", "stream", int | None, -1),
    ("device", "device", int | None, -1),
    ("grid", "grid", list[int] | str | None, None),  # str: Inductor's cpu_op "grid(100,)"
    ("block", "block", list[int] | None, None),
    ("registers", "registers per thread", int | None, None),
    ("shared_memory", "shared memory", int | None, None),
    ("occupancy", "est. achieved occupancy %", int | float | None, None),
    # Kineto's grid blocks / SM count and its warps: "inf" (text) where it divided by zero
    ("blocks_per_sm", "blocks per SM", int | float | str | None, None),
    ("warps_per_sm", "warps per SM", int | float | str | None, None),
    ("input_dims", "Input Dims", msgspec.Raw, None),  # kept as JSON text
    ("input_type", "Input type", msgspec.Raw, None),
    # scalar arguments as the profiler printed them (stride, is_causal, ...), torch >= 2.1
    ("concrete_inputs", "Concrete Inputs", msgspec.Raw, None),
    # what record_param_comms records of a collective (torch >= 2.2; kept as JSON text)
    ("comm_name", "Collective name", msgspec.Raw, None),
    ("comm_in", "In msg nelems", msgspec.Raw, None),
    ("comm_out", "Out msg nelems", msgspec.Raw, None),
    ("comm_group", "Group size", msgspec.Raw, None),
    ("comm_dtype", "dtype", msgspec.Raw, None),
    ("comm_pg", "Process Group Name", msgspec.Raw, None),
    ("alloc_bytes", "Bytes", int | None, None),
    ("addr", "Addr", int | None, None),
    ("total_allocated", "Total Allocated", int | None, None),
    ("total_reserved", "Total Reserved", int | None, None),
    ("device_type", "Device Type", int | None, None),
    ("device_id", "Device Id", int | None, None),
    ("python_id", "Python id", int | None, None),
    ("python_parent_id", "Python parent id", int | None, None),
    ("flops", "flops", int | float | None, None),
    ("copy_bytes", "bytes", int | None, None),  # device copies and memsets
    # autograd's sequence number: a forward op's, and the backward node's that it made
    ("sequence", "Sequence number", int | None, None),
    # on backward nodes: the profiler's id of the thread that ran the forward (0 on forward ops)
    ("fwd_thread", "Fwd thread id", int | None, None),
    ("meta_name", "name", str | None, None),
]
#: args read as columns: (attribute, default when absent)
ID_ARGS = ("external_id", "external_id_old", "correlation", "stream", "device")


def _make_structs(lenient: bool):
    # gc=False: these structs never form cycles, and keeping hundreds of
    # thousands of them out of the cyclic GC makes decoding about 3x faster.
    arg_fields = [
        (
            attr,
            Any if lenient and typ is not msgspec.Raw else typ,
            msgspec.field(default=default, name=key),
        )
        for attr, key, typ, default in ARG_FIELDS
    ]
    # strict Args are frozen so that events without args can share one default
    args_type = msgspec.defstruct("Args", arg_fields, gc=False, frozen=not lenient)
    num = Any if lenient else float
    ident = Any if lenient else (int | str)
    text = Any if lenient else (str | None)
    event_fields = [
        ("ph", Any if lenient else str, ""),
        ("name", Any if lenient else str, ""),
        ("cat", text, None),
        ("ts", num, math.nan),
        ("dur", num, 0.0),
        ("pid", ident, 0),
        ("tid", ident, 0),
        ("id", Any if lenient else (int | str | None), None),
        # strict: never None, so the loader reads args column-wise without tests
        (
            "args",
            (args_type | None) if lenient else args_type,
            msgspec.field(default_factory=args_type) if lenient else args_type(),
        ),
    ]
    return args_type, msgspec.defstruct("Event", event_fields, gc=False)


_STRICT_ARGS, _STRICT_EVENT = _make_structs(lenient=False)
LENIENT_ARGS, _LENIENT_EVENT = _make_structs(lenient=True)
# the decoders of a user's text refuse bytes that are not UTF-8 alike under every msgspec
# (`utf8.py`); `RAW_LIST` decodes no string, so it has nothing to refuse
STRICT_BATCH = StrictDecoder(list[_STRICT_EVENT])
LENIENT_BATCH = StrictDecoder(list[_LENIENT_EVENT])
RAW_LIST = msgspec.json.Decoder(list[msgspec.Raw])


class DeviceProperties(msgspec.Struct):
    id: Any = None
    name: Any = None
    totalGlobalMem: Any = None
    computeMajor: Any = None
    computeMinor: Any = None
    numSms: Any = None


class TopLevel(msgspec.Struct):
    """The trace file's top-level object; unknown keys are ignored."""

    traceEvents: list[msgspec.Raw] | None = None
    schemaVersion: Any = None
    deviceProperties: list[DeviceProperties] | None = None
    distributedInfo: Any = None
    baseTimeNanoseconds: Any = None
    displayTimeUnit: Any = None
    traceName: Any = None
    cuda_runtime_version: Any = None
    cuda_driver_version: Any = None
    cupti_version: Any = None
    hip_runtime_version: Any = None
    hip_driver_version: Any = None
    roctracer_version: Any = None
    kinetoscope: Any = None
    # the profiler's own log lines, by level (Kineto's LoggerCollector metadata)
    INFO: Any = None
    WARNING: Any = None
    ERROR: Any = None


TOP_DECODER = StrictDecoder(TopLevel)
#: the top-level keys, each value kept as its text (`slice` and `export` copy them)
TOP_KEYS = StrictDecoder(dict[str, msgspec.Raw])


def normalize_lenient(batch: list[Any]) -> list[Any]:
    """Coerce leniently decoded events to the strict field types, in place."""
    for ev in batch:
        ev.ph = ev.ph if isinstance(ev.ph, str) else str(ev.ph)
        ev.name = ev.name if isinstance(ev.name, str) else str(ev.name)
        ev.cat = ev.cat if ev.cat is None or isinstance(ev.cat, str) else str(ev.cat)
        ev.ts = as_time(ev.ts, "ts")
        ev.dur = as_time(ev.dur, "dur")
        for attr in ("pid", "tid"):
            value = getattr(ev, attr)
            if not isinstance(value, (int, str)):
                setattr(ev, attr, str(value))
        if ev.id is not None and not isinstance(ev.id, (int, str)):
            ev.id = None  # a list or object is no flow id (the columns read it as absent)
        args = ev.args
        if not isinstance(args, LENIENT_ARGS):
            args = ev.args = LENIENT_ARGS()
        for attr in ID_ARGS:
            setattr(args, attr, as_int(getattr(args, attr)))
        for attr in ("grid", "block"):
            if not isinstance(getattr(args, attr), list):
                setattr(args, attr, None)
        if args.flops is not None and args.flops.__class__ is not int:
            args.flops = as_float(args.flops)  # an int stays one, as in the strict decoder
        if args.meta_name is not None:
            args.meta_name = str(args.meta_name)
    return batch


def as_int(value: Any, default: int = -1) -> int:
    """`value` as an int, `default` where absent, not a number, or outside int64
    (the columns are int64; no id or byte count the profiler writes is larger)."""
    if value is None:
        return default
    try:
        number = int(value)
    except (TypeError, ValueError, OverflowError):
        return default
    return number if -(2**63) <= number < 2**63 else default


def as_float(value: Any) -> float:
    """`value` as a float, NaN where it is not a number or beyond a float's range."""
    try:
        return float(value)
    except (TypeError, ValueError, OverflowError):
        return math.nan


class OutOfRange(ValueError):
    """An event's time is an integer no float holds (309 digits or more; msgspec reads
    up to 4,300 into a Python int where the type is open). A time is what every
    analysis rests on, so the trace is refused, as msgspec refuses `1e400` there."""

    def __init__(self, key: str, value: int):
        try:
            digits = f"{len(str(abs(value))):,}"
        except ValueError:  # past Python's 4,300 digits for str(): msgspec stops there too
            digits = "over 4,300"
        super().__init__(f"has a `{key}` beyond a float's range (an integer of {digits} digits)")


def as_time(value: Any, key: str) -> float:
    """`as_float` for an event's `ts` or `dur`: `OutOfRange` where the integer is too
    large for a float (NaN would hide the event from every analysis without a word)."""
    try:
        return float(value)
    except OverflowError:
        raise OutOfRange(key, value) from None
    except (TypeError, ValueError):
        return math.nan
