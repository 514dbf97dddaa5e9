"""Can the numbers of this trace be believed? A trust check before any verdict.

Every figure kinetoscope reports rests on the profiler having recorded what
happened, on one clock, finely enough. Each check below names a way that
fails, from the mechanism:

- clock skew: a kernel cannot start before the host call that enqueued it;
  when it does in the trace, the device and host clocks disagree by at least
  that much, and every host/device comparison is off by as much;
- timestamp resolution: whole-microsecond traces cannot show microsecond gaps;
- dropped device events: a launch whose correlation id has no device event
  means CUPTI/roctracer lost the record (buffers full, or the collection
  stopped early), so device busy time is undercounted;
- CUDA-graph replays whose kernels are not recorded: the device work exists
  but the trace cannot show it;
- kernels launched with cuLaunchKernelEx that record 0% occupancy (cluster
  launches, cuDNN attention): the profiler's calculator cannot handle those
  launch attributes; it is a blind spot, not a real 0%;
- a file that lost events (cut off, corrupt gzip): the loader keeps every
  complete event before the damage, but what came after is gone, and Kineto
  writes host events before the device records it drains from CUPTI at the
  end, so a cut removes device work first: every figure can be wrong;
- overlapping or incomplete steps: per-step figures double count or cut work;
- the profiler's own artifacts (Activity Buffer Request, the final flush);
- a capture that cannot be judged at all (`account.capture`: device records lost, a
  window mostly empty or dead, too few events, a contended CPU, steps that wrap
  several iterations): poor, and the verdict is withheld or qualified.
"""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np

from ..trace import Trace
from ..trace.categories import GRAPH_LAUNCHES
from ..trace.repair import changes_data
from .account.capture import capture_issues
from .gpu_lane import buffer_requests
from .quality_issue import GRADES, QualityIssue
from .resolution import Resolution, timestamp_resolution
from .steps import step_stats

EX_LAUNCHES = frozenset({"cuLaunchKernelEx", "cudaLaunchKernelExC"})
#: Kineto's record counts line: "CPU GPU out-of-order = N" counts device records
#: that came before their host op; "CUPTI stopped early? = 1" means records were lost.
_OUT_OF_ORDER = re.compile(r"CPU GPU out-of-order = (\d+)")
_STOPPED_EARLY = re.compile(r"CUPTI stopped early\? = 1")
_DROPPED = re.compile(r"drop|buffer.*full|overflow", re.I)
#: The loader's warnings (trace/decode.py, top_decode.py, source.py) for damage that
#: lost events: a cut ("file is truncated at byte N: recovered K complete events",
#: "gzip stream ends early (file truncated)") or corrupt compressed data.
_LOST_EVENTS = re.compile(r"truncated|gzip data is corrupt")
#: ... and for damage that lost the keys after the events (device properties, versions).
_LOST_KEYS = re.compile(r"keys after 'traceEvents' are not valid JSON")
#: Above this share of launches without device events, device figures are unreliable.
POOR_DROPPED_SHARE = 0.05
#: Above this share of kernels starting before their launch (or this skew), poor.
POOR_SKEW_SHARE = 0.10
POOR_SKEW_US = 100.0


@dataclass(frozen=True)
class TraceQuality:
    grade: str
    resolution: Resolution
    issues: list[QualityIssue] = field(default_factory=list)

    @property
    def reasons(self) -> list[str]:
        return [i.text for i in self.issues if i.level != "note"]

    def to_dict(self) -> dict[str, Any]:
        """The JSON form every command writes (explain's `quality`, summary's `quality`)."""
        return {
            "grade": self.grade,
            "reasons": self.reasons,
            "resolution_us": {"host": self.resolution.host_us, "device": self.resolution.device_us},
            "issues": [asdict(i) for i in self.issues],
        }


def _skew(trace: Trace, tolerance: float) -> list[QualityIssue]:
    launch = trace.launch_of
    dev = np.flatnonzero(launch >= 0)
    out = []
    if len(dev):
        lead = trace.ts[launch[dev]] - trace.ts[dev]  # > 0: device started first
        bad = lead > tolerance
        if bad.any():
            worst = float(lead[bad].max())
            share = float(bad.mean())
            level = "poor" if share >= POOR_SKEW_SHARE or worst >= POOR_SKEW_US else "caution"
            out.append(
                QualityIssue(
                    "clock-skew",
                    level,
                    f"{int(bad.sum())} of {len(dev)} device events start before the call that "
                    f"launched them (up to {worst:.1f} us): host and device clocks disagree",
                    int(bad.sum()),
                    worst,
                )
            )
    for line in trace.meta.profiler_log.get("INFO", []):
        m = _OUT_OF_ORDER.search(line)
        if m and int(m.group(1)) > 0 and not out:
            out.append(
                QualityIssue(
                    "clock-skew",
                    "caution",
                    f"the profiler counted {m.group(1)} device records out of order with "
                    "their host ops",
                    int(m.group(1)),
                )
            )
    return out


def _dropped(trace: Trace) -> list[QualityIssue]:
    out = []
    linked = trace.correlation[trace.launch_of[trace.launch_of >= 0]]
    launches = trace.launches
    names = np.array([trace.names[i] for i in trace.name_id[launches]], dtype=object)
    has_corr = trace.correlation[launches] >= 0
    seen = np.isin(trace.correlation[launches], linked)
    graph = np.isin(names, list(GRAPH_LAUNCHES))
    if len(linked):  # without any link the trace cannot tell a drop from a missing id
        missing = has_corr & ~seen & ~graph
        plain = int((has_corr & ~graph).sum())
        if missing.any():
            share = float(missing.sum()) / max(plain, 1)
            out.append(
                QualityIssue(
                    "dropped-events",
                    "poor" if share >= POOR_DROPPED_SHARE else "caution",
                    f"{int(missing.sum())} of {plain} kernel launches have no device event "
                    f"({share:.1%}): device records were lost, device time is undercounted",
                    int(missing.sum()),
                )
            )
    blind = graph & ~seen
    if blind.any():
        out.append(
            QualityIssue(
                "graph-kernels-hidden",
                "caution",
                f"{int(blind.sum())} CUDA/HIP graph replays show no kernels: the device work "
                "they ran is missing from every device figure",
                int(blind.sum()),
            )
        )
    logs = trace.meta.profiler_log
    lost = [ln for ln in logs.get("WARNING", []) + logs.get("ERROR", []) if _DROPPED.search(ln)]
    lost += [ln for ln in logs.get("INFO", []) if _STOPPED_EARLY.search(ln)]
    if lost:
        out.append(
            QualityIssue(
                "profiler-warnings",
                "caution",
                f"the profiler logged lost records: {lost[0][-160:]}",
                len(lost),
            )
        )
    return out


def _damage(trace: Trace) -> list[QualityIssue]:
    """Events or top-level keys the loader could not read (its warnings say which)."""
    out = []
    lost = [w for w in trace.warnings if _LOST_EVENTS.search(w)]
    if lost:
        out.append(
            QualityIssue(
                "lost-events",
                "poor",
                f"the file lost events ({'; '.join(lost)}): what came after the damage is "
                "missing, device records first (the profiler writes them last)",
                len(lost),
            )
        )
    if any(_LOST_KEYS.search(w) for w in trace.warnings):
        out.append(
            QualityIssue(
                "lost-metadata",
                "caution",
                "the keys after the events could not be read: device properties and "
                "versions may be missing",
            )
        )
    return out


def _occupancy_blind_spot(trace: Trace) -> list[QualityIssue]:
    args = trace.kernel_args
    zero = args.index[args.occupancy == 0]
    if not len(zero):
        return []
    launch = trace.launch_of[zero]
    via_ex = np.array(
        [launch[k] >= 0 and trace.name(int(launch[k])) in EX_LAUNCHES for k in range(len(zero))],
        dtype=bool,
    )
    if not via_ex.any():
        return []
    return [
        QualityIssue(
            "occupancy-blind-spot",
            "note",
            f"{int(via_ex.sum())} kernels launched with cuLaunchKernelEx record 0% occupancy: "
            "the profiler cannot compute it for those launches, it is not a real 0%",
            int(via_ex.sum()),
        )
    ]


def _steps(trace: Trace, tolerance: float) -> list[QualityIssue]:
    steps = sorted(trace.steps, key=lambda s: s.start)
    out = []
    overlaps = sum(
        1 for a, b in zip(steps[:-1], steps[1:], strict=True) if a.end > b.start + tolerance
    )
    if overlaps:
        out.append(
            QualityIssue(
                "overlapping-steps",
                "caution",
                f"{overlaps} ProfilerStep windows overlap the next one: per-step figures "
                "count that time twice",
                overlaps,
            )
        )
    stats = step_stats(trace)
    if len(trace.steps) >= 3:
        last, rest = stats[-1], stats[:-1]
        median_dur = float(np.median([s.dur for s in rest]))
        median_launches = float(np.median([s.launches for s in rest]))
        if last.dur < 0.5 * median_dur and last.launches < 0.5 * median_launches:
            out.append(
                QualityIssue(
                    "incomplete-last-step",
                    "caution",
                    f"the last step #{last.number} is cut short ({last.dur:.0f} us and "
                    f"{last.launches} launches vs a median {median_dur:.0f} us and "
                    f"{median_launches:.0f}): the profiler stopped inside it",
                    value_us=last.dur,
                )
            )
    return out


def _artifacts(trace: Trace) -> list[QualityIssue]:
    reqs = buffer_requests(trace)
    if not len(reqs):
        return []
    total = float(trace.dur[reqs].sum())
    return [
        QualityIssue(
            "profiler-artifacts",
            "note",
            f"{len(reqs)} Activity Buffer Request event(s), {total:.0f} us: the profiler "
            "refilling its own buffers, not your program's work",
            len(reqs),
            total,
        )
    ]


def _input_repaired(trace: Trace) -> list[QualityIssue]:
    """Values the loader dropped or replaced to read the file (a value nested too deep,
    an integer past int64, a gzip trailer that does not match): the figures rest on
    what was left, so the grade says so."""
    changed = [w for w in trace.warnings if changes_data(w)]
    if not changed:
        return []
    return [
        QualityIssue(
            "input-repaired",
            "caution",
            f"the loader changed the input to read it: {'; '.join(changed)}",
            len(changed),
        )
    ]


def trace_quality(trace: Trace) -> TraceQuality:
    resolution = timestamp_resolution(trace)
    issues: list[QualityIssue] = _damage(trace)
    tolerance = resolution.coarsest_us
    issues += _skew(trace, tolerance)
    if resolution.whole_us:
        issues.append(
            QualityIssue(
                "timestamp-resolution",
                "caution",
                "timestamps are whole microseconds: gaps and latencies of a few us cannot "
                "be measured (findings below 4 us are not reported)",
                value_us=resolution.coarsest_us,
            )
        )
    if len(trace.launches):
        issues += _dropped(trace)
    issues += _occupancy_blind_spot(trace)
    issues += _steps(trace, tolerance)
    issues += _artifacts(trace)
    issues += _input_repaired(trace)
    issues += capture_issues(trace)
    levels = [GRADES.index(i.level) for i in issues if i.level in GRADES]
    return TraceQuality(GRADES[max(levels, default=0)], resolution, issues)
