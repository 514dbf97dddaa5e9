"""The `Report`: everything `explain` says about one trace, as plain data.

Built once by the build step (`pipeline.build`); every renderer (text, markdown,
JSON, HTML) only lays it out, and this module imports no renderer: what a renderer
needs that JSON does not carry (the HTML reading order, the words of the host-time
split, the notebook renderer) is a field the build step fills. `to_dict()` is the
versioned JSON contract documented in docs/report-schema.md: bump `SCHEMA_VERSION`
when a field changes meaning or disappears (adding fields does not).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from typing import Any

from ..formatting.jsontext import dumps
from ..rules.base import Finding
from ..rules.engine import Skipped

SCHEMA_VERSION = 2


@dataclass
class TraceFacts:
    path: str
    #: absolute timestamp (us, the trace's own clock) of the trace start: the zero of
    #: every relative time in the report
    origin_us: float
    events: int
    devices: list[dict[str, Any]]
    versions: dict[str, Any]
    #: the active window relative to the trace start: start_us, end_us, dur_us, steps
    window: dict[str, float]
    rank: int | None = None
    warnings: list[str] = field(default_factory=list)
    #: why the columns were kept in temporary files (`--max-memory`); None: in memory
    out_of_core: str | None = None
    #: how `kinetoscope profile` recorded the run (trace.top_meta.run_metadata): workload,
    #: params, dtype, compile, warmup_iters, schedule, ...; {} for other traces
    run: dict[str, Any] = field(default_factory=dict)


@dataclass
class Verdict:
    regime: str
    summary: str
    host_time_us: float
    device_busy_us: float
    #: the device's share of the steady part, the number compared to the thresholds
    ratio: float
    device: str | None
    #: the steady part split by what held it (analysis.account: device, python, dispatch,
    #: data, sync_stall, external), each class's share of the steady part
    decomposition: dict[str, float] = field(default_factory=dict)
    #: the window account: every class's share of the whole window (they add up to 1)
    account: dict[str, float] = field(default_factory=dict)
    #: the account in microseconds, the steady part, one-time and profiler time by cause
    account_us: dict[str, Any] = field(default_factory=dict)
    #: why the verdict is withheld (not-judged) or qualified: the capture's poor checks
    reasons: list[str] = field(default_factory=list)


@dataclass
class StepRow:
    label: str
    number: int | None
    start_us: float  # relative to the trace start
    dur_us: float
    host_busy_us: float
    device_busy_us: float
    kernels: int
    launches: int
    syncs: int  # real host-device syncs in the step
    data_wait_us: float
    sync_wait_us: float
    dispatch_us: float
    other_us: float
    #: why the step stands out (e.g. "2.4x the median"), None for ordinary steps
    outlier: str | None = None
    #: math-op self time on a trace without device work (analysis.cpu_compute), else 0
    compute_us: float = 0.0


@dataclass
class TimelineMark:
    finding: str
    severity: str
    ts_us: float
    dur_us: float
    label: str


@dataclass
class Timeline:
    """Busy intervals (relative us) of the host and device lanes over the window."""

    start_us: float
    end_us: float
    lanes: dict[str, list[tuple[float, float]]]
    steps: list[tuple[str, float, float]]
    marks: list[TimelineMark]


@dataclass(repr=False)
class Report:
    version: str
    trace: TraceFacts
    verdict: Verdict
    steps: list[StepRow]
    metrics: dict[str, float]
    #: `labels`: which statistic each metric is; `per_step`: {figure: {median, mean, p90}}
    statistics: dict[str, Any]
    findings: list[Finding]
    not_checked: list[Skipped]
    rules: list[str]
    timeline: Timeline
    #: trust check (pipeline/sections.py): grade, reasons, timestamp resolution, issues
    quality: dict[str, Any] = field(default_factory=dict)
    #: device time by kernel type, total and per step
    kernel_types: dict[str, Any] = field(default_factory=dict)
    #: busy time per device stream, communication hidden/exposed per step
    streams: dict[str, Any] = field(default_factory=dict)
    #: every collective by family and kind: time, spread, bytes, bandwidth; {} if none
    communication: dict[str, Any] = field(default_factory=dict)
    #: LLM generation passes (prefill/decode), time to first token, decode latency; {} if none
    llm: dict[str, Any] = field(default_factory=dict)
    #: mixture-of-experts parts, dense/sparse dispatch, expert loads (pipeline/moe_section.py)
    moe: dict[str, Any] = field(default_factory=dict)
    #: time per nn.Module path, forward and backward trees (pipeline/modules_section.py);
    #: only `hint` where the trace has no module ranges
    modules: dict[str, Any] = field(default_factory=dict)
    #: the kernel view: launch config, occupancy, Tensor Cores (pipeline/kernels_section.py)
    kernels: dict[str, Any] = field(default_factory=dict)
    #: source lines by the window time they hold per account class (pipeline/lines_section.py);
    #: without Python stacks only the hint saying how to record them; {} when not built
    lines: dict[str, Any] = field(default_factory=dict)
    #: Builds what only the HTML report shows (pipeline.interactive: event timeline, kernel
    #: and op tables) on demand: it costs a pass over every event.
    interactive: Callable[[], dict] | None = field(default=None, compare=False)
    #: the words of each class in `verdict.decomposition` and `verdict.account`
    decomposition_words: dict[str, str] = field(default_factory=dict)
    #: the critical path (pipeline/path_section.py): segments adding up to the window,
    #: and its time by (class, name) with what shortening each could save at most
    critical_path: dict[str, Any] = field(default_factory=dict)
    #: the HTML renderer Jupyter's display calls (report.html.notebook_html), set by the
    #: build step so that this model never imports a renderer; None: plain repr only
    notebook_html: Callable[[Report], str | None] | None = field(default=None, compare=False)

    def to_dict(self) -> dict[str, Any]:
        return _rounded(
            {
                "kinetoscope": self.version,
                "schema_version": SCHEMA_VERSION,
                "trace": asdict(self.trace),
                "verdict": asdict(self.verdict),
                "steps": [asdict(s) for s in self.steps],
                "metrics": self.metrics,
                "statistics": self.statistics,
                "findings": [f.to_dict() for f in self.findings],
                "not_checked": [s.to_dict() for s in self.not_checked],
                "rules": self.rules,
                "timeline": asdict(self.timeline),
                "quality": self.quality,
                "kernel_types": self.kernel_types,
                "streams": self.streams,
                "communication": self.communication,
                "llm": self.llm,
                "moe": self.moe,
                "modules": self.modules,
                "kernels": self.kernels,
                "lines": self.lines,
                "critical_path": self.critical_path,
            }
        )

    def to_json(self, indent: int | None = 2) -> str:
        return dumps(self.to_dict(), indent=indent)

    def skipped_groups(self) -> list[tuple[list[str], str, str]]:
        """Not-checked rules sharing a reason and advice, as (ids, reason, advice), in order.

        Text, Markdown and HTML print one line per group ("memory-peak, memory-spike:
        no [memory] events"); JSON keeps one entry per rule.
        """
        groups: dict[tuple[str, str], list[str]] = {}
        for skip in self.not_checked:
            groups.setdefault((skip.reason, skip.advice or ""), []).append(skip.id)
        return [(ids, reason, advice) for (reason, advice), ids in groups.items()]

    def __repr__(self) -> str:
        return (
            f"<Report {self.trace.path}: {self.verdict.summary}; "
            f"{len(self.findings)} findings, {len(self.not_checked)} not checked>"
        )

    def _repr_html_(self) -> str | None:
        """Jupyter's rich display (`notebook_html`); None (plain repr) where jinja2 is not
        installed or no renderer was set."""
        return self.notebook_html(self) if self.notebook_html is not None else None


def _rounded(value: Any) -> Any:
    """Floats to 4 decimals (0.1 ns, or 1e-4 of a ratio): the JSON stays readable."""
    if isinstance(value, float):
        return round(value, 4)
    if isinstance(value, dict):
        return {k: _rounded(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_rounded(v) for v in value]
    return value
