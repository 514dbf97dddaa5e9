"""The LLM view: the passes of a generation, their phase, latency and cost.

An LLM generates in two phases with different costs. The *prefill* runs the
whole prompt through the model once (large matrices: S tokens per sequence)
and yields the first token; every *decode* pass then feeds one new token per
sequence (S = 1), reusing the keys and values cached for the earlier ones.
Decode passes run the full layer stack on tiny matrices, so on a GPU they are
usually bound by the host launching kernels, not by the device. A serving
engine schedules steps that can mix both (chunked prefill: prompt chunks and
decode tokens in one batch).

`analysis.llm_find` says where the passes are (engine annotations, engine
model-runner ranges, or model forwards), `analysis.llm_passes` what each cost.
Time to first token is the first prefill pass, from its start to the end of its
device work; time per output token is the mean decode pass (one token per
sequence each). When nothing recorded names a pass's phase (an engine range
whose input ids are not shaped, inside a CUDA graph or without record_shapes),
the phase is read from order and device time: a prefill runs the same weights
as a decode of the same batch on more tokens per sequence, so it does strictly
more device work; the first pass is called the prefill only when it is longer
than every later pass, the later ones decode. Otherwise the phases stay
`unknown` (a window that starts mid-generation, or a batch of prefills). An engine
step that replays exactly one graph is a decode: engines capture whole-forward
graphs for decode batches only (piecewise graphs, dozens per step, serve any phase).

A pass is an engine step or forward that launched work: a step with no device
work (an empty 0.1 ms engine step after the last token) is no pass, nor part of
TTFT or TPOT. Passes never overlap: a pass whose device work runs past the next
pass's start ends there (its device time still counts in full), so the passes'
durations add up to at most the window. Model forwards found from embeddings are
a generation only on the evidence `analysis.llm_evidence` lists (a decoder, not
an encoder or a detector); graph replays followed by a token choice are the last
resort (`llm_find.graph_replays`).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from ..formatting.units import fmt_us
from ..trace import Trace
from .llm_evidence import generation_evidence
from .llm_find import annotated, engine_ranges, forwards, graph_replays
from .llm_passes import Costs, Pass, PassSpec
from .stats import Spread

PHASES = ("prefill", "chunked prefill", "decode", "mixed", "unknown")


@dataclass(frozen=True)
class PhaseTotals:
    """One phase's passes summed: what the prefill or the decode loop cost in all."""

    passes: int
    tokens: int | None  # None when any pass's tokens are unrecorded
    wall_us: float  # sum of pass durations (each to the end of its device work)
    host_us: float  # sum of host windows
    device_busy_us: float
    graph_launches: int
    compute_busy_us: float = 0.0  # device time less communication kernels
    comm_busy_us: float = 0.0  # communication kernels' device time


@dataclass(frozen=True)
class LlmView:
    #: "annotations", "engine ranges", "shapes", "shapes and order" or "order"
    source: str
    #: how the phases were read, in words (say what a phase was inferred from)
    phase_from: str
    passes: list[Pass]
    engine: str | None = None
    #: what says the trace generates, in words (engine steps: the engine's own records)
    evidence: str = "the serving engine's step records"
    #: empty engine steps (no work launched) left out of the passes
    dropped: int = 0

    def phase(self, name: str) -> list[Pass]:
        return [p for p in self.passes if p.phase == name]

    def totals(self) -> dict[str, PhaseTotals]:
        """Per-phase sums for the phases present, in PHASES order."""
        out = {}
        for name in PHASES:
            passes = self.phase(name)
            if not passes:
                continue
            tokens = [p.tokens for p in passes]
            out[name] = PhaseTotals(
                passes=len(passes),
                tokens=None if None in tokens else sum(tokens),
                wall_us=sum(p.dur for p in passes),
                host_us=sum(p.host_us for p in passes),
                device_busy_us=sum(p.device_busy_us for p in passes),
                graph_launches=sum(p.graph_launches for p in passes),
                compute_busy_us=sum(p.compute_busy_us for p in passes),
                comm_busy_us=sum(p.comm_busy_us for p in passes),
            )
        return out

    @property
    def ttft_us(self) -> float | None:
        """Time to first token: the first prefill pass, from its start until its work is
        done (prompt in, first token out), even where its device work runs into the next
        pass."""
        prefill = self.phase("prefill")
        return prefill[0].done - prefill[0].start if prefill else None

    @property
    def tpot_us(self) -> float | None:
        """Time per output token: the mean decode pass (each yields one token per sequence)."""
        decode = self.phase("decode")
        return sum(p.dur for p in decode) / len(decode) if decode else None

    @property
    def decode_latency(self) -> Spread | None:
        """Per-token decode latency: the spread of decode pass durations."""
        decode = self.phase("decode")
        return Spread.of([p.dur for p in decode]) if decode else None


def llm_view(trace: Trace) -> LlmView | None:
    """The passes of the generation(s) in the trace, None when it holds no LLM passes."""
    return trace.memo(_view)


def _view(trace: Trace) -> LlmView | None:
    if specs := annotated(trace):
        passes, dropped = _measure(trace, specs)
        phase_from = "the engine's step annotations (request and token counts per step)"
        return LlmView("annotations", phase_from, passes, dropped=dropped) if passes else None
    specs, engine = engine_ranges(trace)
    if specs:
        passes, dropped = _measure(trace, specs)
        if not passes:
            return None
        passes, phase_from = _engine_phases(passes, engine)
        return LlmView("engine ranges", phase_from, passes, engine, dropped=dropped)
    specs, shaped, compiled = forwards(trace)
    passes, _ = _measure(trace, specs)
    evidence = generation_evidence(trace, passes) if passes else None
    if evidence is None:
        return _replays(trace)  # a plain forward (an encoder, a detector): no generation
    where = (
        "calls of the compiled forward (Torch-Compiled Region), a token chosen between each two; "
        if compiled
        else ""
    )
    if shaped == len(passes):
        phase_from = where + "input ids' shape [batch, tokens] (1 token: decode)"
        return LlmView("shapes", phase_from, passes, evidence=evidence)
    order = (
        "order: the first forward in each step or annotation is the prompt, as generate() "
        "always runs it first; the later ones decode"
    )
    if shaped:
        phase_from = f"{where}input ids' shape where recorded, else {order}"
        return LlmView("shapes and order", phase_from, passes, evidence=evidence)
    return LlmView("order", f"{where}{order} (no input shapes)", passes, evidence=evidence)


def _replays(trace: Trace) -> LlmView | None:
    passes, _ = _measure(trace, graph_replays(trace))
    if not passes:
        return None
    phase_from = (
        "graph replays: a captured graph has static shapes, and the one-token decode step "
        "is what engines and static-cache generation capture"
    )
    evidence = "each graph replay followed by the next token's choice (argmax, sampling)"
    return LlmView("graph replays", phase_from, passes, evidence=evidence)


def _measure(trace: Trace, specs: list[PassSpec]) -> tuple[list[Pass], int]:
    """The passes that launched work, tiled (see the module docstring); how many
    were dropped for launching none."""
    costs = Costs(trace) if specs else None
    measured = [costs.measure(s) for s in specs] if costs else []
    on_cpu = not bool(trace.device_work.any())
    kept = [p for p in measured if p.kernels or p.device_busy_us > 0 or (on_cpu and p.host_ops)]
    tiled = []
    for k, p in enumerate(kept):
        if k + 1 < len(kept) and p.end > kept[k + 1].start:
            nxt = kept[k + 1].start
            p = replace(p, end=max(nxt, p.start), host_end=min(p.host_end, max(nxt, p.start)))
        tiled.append(p)
    return tiled, len(measured) - len(kept)


def _engine_phases(passes: list[Pass], engine: str | None) -> tuple[list[Pass], str]:
    """Phases of engine passes whose input ids recorded none, from order and device time
    (host time where the trace has no device work), see the module docstring."""
    graphed = [k for k, p in enumerate(passes) if p.phase is None and p.graph_launches == 1]
    passes = [replace(p, phase="decode") if k in graphed else p for k, p in enumerate(passes)]
    unread = [k for k, p in enumerate(passes) if p.phase is None]
    if graphed and not unread:
        return passes, (
            f"graph replays: each {engine} step replays one whole-forward graph, which "
            "engines capture for decode batches only"
        )
    if not unread:
        return passes, "input ids' shape [batch, tokens] inside each step (1 token: decode)"
    work = [_work(passes[k]) for k in unread]
    kind = "device" if any(passes[k].device_busy_us for k in unread) else "host"
    if len(work) >= 2 and work[0] > max(work[1:]):
        phases = ["prefill"] + ["decode"] * (len(work) - 1)
        phase_from = (
            f"order and {kind} time (no token shapes): the first {engine} step is the "
            f"longest ({fmt_us(work[0])} vs at most {fmt_us(max(work[1:]))} for the "
            f"{len(work) - 1} later ones), as a prompt is; the later ones decode"
        )
    else:
        phases = ["unknown"] * len(work)
        phase_from = (
            f"not recorded: the {engine} steps carry no token shapes, and the first is "
            "not longer than every later one (a window that starts mid-generation, or "
            "steps of one kind)"
        )
    out = list(passes)
    for k, phase in zip(unread, phases, strict=True):
        out[k] = replace(passes[k], phase=phase)
    return out, phase_from


def _work(p: Pass) -> float:
    return p.device_busy_us if p.device_busy_us else p.host_us
