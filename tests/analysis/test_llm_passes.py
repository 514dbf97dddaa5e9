"""LLM passes by mechanism (analysis/llm.py, llm_evidence.py, llm_find.py, llm_split.py):
empty engine steps are no pass, passes tile the window, a language model is recognised by
what it does (decodes, a growing cache, a token chosen; a prefill alone by causal
attention and a token chosen over its vocabulary), graph-replay decodes, token counts from
copies, and each pass's split from the window account. Expectations were read from the
recordings' scripts (tests/llm_traces.py), the corpus traces and the built events."""

from __future__ import annotations

import gzip
import json

import pytest

import kinetoscope
from kinetoscope.analysis.llm import llm_view
from kinetoscope.analysis.llm_find import annotated
from kinetoscope.analysis.llm_passes import Costs

from ..conftest import corpus, kernel, launch, op, write_trace
from ..llm_traces import llm_traces  # noqa: F401 - the fixture

SGLANG = "gpu/tracelens_sglang_decode__sglang_Qwen3-8B_decode.json.gz"
VLLM = "gpu/tracelens_vllm_prefilldecode_piecewise__graph_execution.json.gz"
B200 = "gpu/tracelens_b200__eager_trace.json.gz"


def _tiled(view, trace):
    """Passes in time order never overlap, so they add up to at most their span."""
    for a, b in zip(view.passes, view.passes[1:], strict=False):
        assert a.end <= b.start
    span = view.passes[-1].end - view.passes[0].start
    assert sum(p.dur for p in view.passes) <= span + 1e-6


# ---- CPU recordings: the hand-written decoder --------------------------------------


def test_prefill_only_is_one_prefill_filling_an_empty_cache(llm_traces):  # noqa: F811
    """One forward on [1, 6] ids; each of 2 layers cats its keys and values onto an empty
    [1, 2, 0, 16] cache: 4 appends of [1, 2, 6, 16] fp32 (768 B each)."""
    trace = kinetoscope.load(llm_traces["prefill"])
    view = llm_view(trace)
    assert view is not None and view.source == "shapes"
    (p,) = view.passes
    assert (p.phase, p.tokens, p.batch, p.tokens_from) == ("prefill", 6, 1, "input ids' shape")
    assert (p.kv_appends, p.kv_append_bytes) == (4, 4 * 768)
    assert view.ttft_us == p.dur and view.tpot_us is None
    assert "KV cache" in view.evidence


def test_prefill_without_cache_is_known_by_causal_attention_and_vocab_choice(llm_traces):  # noqa: F811
    """No cache, no decode: the prompt's attention is masked with torch.triu and argmax
    picks the next token over the head's 97 logits, the embedding table's 97 rows (the
    older code found no generation here)."""
    view = llm_view(kinetoscope.load(llm_traces["prefill_nocache"]))
    assert view is not None
    (p,) = view.passes
    assert (p.phase, p.tokens, p.kv_appends) == ("prefill", 6, 0)
    assert view.evidence.startswith("causal attention")


def test_decode_only_appends_to_a_cache_filled_before_profiling(llm_traces):  # noqa: F811
    """3 forwards on [1, 1]: the cache held 6 tokens before the window, so each pass's 4
    cats write [1, 2, T, 16] fp32 for T = 7, 8, 9 (128 x T bytes each)."""
    trace = kinetoscope.load(llm_traces["decode"])
    view = llm_view(trace)
    assert [p.phase for p in view.passes] == ["decode"] * 3
    assert [p.tokens for p in view.passes] == [1, 1, 1]
    assert [p.kv_appends for p in view.passes] == [4, 4, 4]
    assert [p.kv_append_bytes for p in view.passes] == [4 * 128 * t for t in (7, 8, 9)]
    assert view.ttft_us is None and view.tpot_us is not None
    _tiled(view, trace)


def test_prefill_then_decodes_tile_and_split_by_the_account(llm_traces):  # noqa: F811
    """A prefill on 6 tokens, then 3 decodes; each pass's split (CPU compute, Python,
    dispatch, waits, other) adds up to its duration, and every format shows it."""
    from kinetoscope.report.markdown import render_markdown
    from kinetoscope.report.text import render_text

    trace = kinetoscope.load(llm_traces["both"])
    view = llm_view(trace)
    assert [p.phase for p in view.passes] == ["prefill"] + ["decode"] * 3
    assert [p.tokens for p in view.passes] == [6, 1, 1, 1]
    assert [p.kv_appends for p in view.passes] == [4] * 4
    _tiled(view, trace)
    report = kinetoscope.explain(llm_traces["both"])
    for p in report.llm["passes"]:
        split = p["split_us"]
        assert set(split) == {"device", "python", "dispatch", "waits", "other"}
        assert sum(split.values()) == pytest.approx(p["dur_us"])
        assert split["device"] > 0  # the CPU's math ran inside every pass
    assert "dev/py/disp/wait" in render_text(report, width=200)
    assert "| dev/py/disp/wait |" in render_markdown(report)
    assert '"split_us"' in json.dumps(report.to_dict()["llm"])
    pytest.importorskip("jinja2")
    from kinetoscope.report.html import render_html

    assert "<th>dispatch</th><th>waits</th>" in render_html(report)


# ---- CPU recordings: models that are not language models ---------------------------


@pytest.mark.parametrize("name", ["encoder", "detector"])
def test_encoder_and_detector_get_no_llm_view(llm_traces, name):  # noqa: F811
    """The encoder embeds token ids [2, 7] three times: no cache, no causal mask, no token
    chosen. The detector embeds 5 object queries ([1, 5] ids) three times and joins a
    class token [1, 1, 32] to its patches [1, 64, 32] along dim 1, the shape of a cache
    append that never grows (the older code read it as 3 prefills with a KV cache)."""
    trace = kinetoscope.load(llm_traces[name])
    assert llm_view(trace) is None
    assert kinetoscope.explain(llm_traces[name]).llm == {}


def test_switch_transformer_causal_forward_without_a_choice_is_no_prefill():
    """The corpus Switch Transformer runs a causal decoder over a whole target sequence
    (teacher forcing) and chooses no token: token ids and a causal mask alone are not a
    generation."""
    assert llm_view(kinetoscope.load(corpus("gpu/switch_transformer_moe_a100.json.gz"))) is None


# ---- built traces: empty engine steps and overlapping passes ------------------------

STEP = "execute_{t}_context_{c}(sq{q}sk{q}sqsq0sqsk0)_generation_{g}(sq{g}sk{k}sqsq0sqsk0)"


def _serving(tmp_path, empty_last=True, overlap=False):
    """vLLM-style annotated steps 10 ms apart: a prefill of 40 tokens (50 kernels of 100
    us), then 3 decodes of 1 token (20 kernels of 100 us), then an empty step of 0.12 ms
    with no launch (the step after the last token). With `overlap`, the prefill's device
    work (50 x 300 us = 15 ms) runs past the next step's start."""
    events, corr = [], 0
    names = [STEP.format(t=40, c=1, q=40, g=0, k=0)]
    names += [STEP.format(t=1, c=0, q=0, g=1, k=41 + n) for n in range(3 + empty_last)]
    for k, name in enumerate(names):
        t0 = 1000.0 + 10_000.0 * k
        empty = empty_last and k == len(names) - 1
        events.append(op(name, t0, 120 if empty else 2000, cat="user_annotation"))
        cursor = t0 + 50
        for j in range(0 if empty else (50 if k == 0 else 20)):
            corr += 1
            events.append(launch(t0 + 10 + 20 * j, 5, corr))
            dur = 300.0 if overlap and k == 0 else 100.0
            cursor = max(cursor, t0 + 20 + 20 * j)
            events.append(kernel(f"k{j}", cursor, dur, corr))
            cursor += dur
    return kinetoscope.load(write_trace(tmp_path / "serving.json", events))


def test_empty_engine_step_is_no_decode_pass(tmp_path):
    trace = _serving(tmp_path)
    view = llm_view(trace)
    assert [p.phase for p in view.passes] == ["prefill", "decode", "decode", "decode"]
    assert view.dropped == 1
    assert all(p.kernels for p in view.passes)
    # TPOT over the 3 real decodes only: each runs 20 kernels of 100 us back to back
    assert view.tpot_us == pytest.approx(sum(p.dur for p in view.passes[1:]) / 3)
    assert view.tpot_us > 2000  # the 0.12 ms empty step would have pulled the mean down
    report = kinetoscope.explain(trace.path)
    assert report.llm["dropped_passes"] == 1


def test_pass_ends_where_the_next_starts(tmp_path):
    """The prefill's 15 ms of device work runs 5 ms into the next step: the pass ends at
    the next step's start, while TTFT runs to the prefill's own device end."""
    trace = _serving(tmp_path, empty_last=False, overlap=True)
    view = llm_view(trace)
    _tiled(view, trace)
    first, second = view.passes[:2]
    assert first.end == second.start
    assert view.ttft_us == pytest.approx(first.done - first.start)
    assert view.ttft_us > first.dur


# ---- token counts from the engine's per-token copies ------------------------------


@pytest.mark.parametrize(("relative", "tokens"), [(B200, 888), (VLLM, 8192)])
def test_copies_give_the_same_token_count_as_the_annotation(relative, tokens):
    """vLLM copies each step's token ids as int32 and its positions as int64: the B200
    step copies 3552 B (888 x 4) and 7104 B (888 x 8), the piecewise step 32768 B and
    65536 B (8192 x 4, x 8). Read without the annotation's count, the copies give it."""
    trace = kinetoscope.load(corpus(relative))
    (spec,) = annotated(trace)
    p = Costs(trace).measure(spec._replace(tokens=None, tokens_from=None))
    assert p.tokens == tokens and p.tokens_from.startswith("copies")


def test_copies_give_prompt_then_one_token_per_decode(tmp_path):
    """A vLLM engine range per step without shapes: the prompt step copies 4196 B and
    8392 B (1049 tokens as int32 ids and int64 positions), each decode 4 B and 8 B."""
    events, corr = [], 0
    frame = "vllm/v1/worker/gpu_model_runner.py(3380): execute_model"
    for k in range(3):
        t0 = 1000.0 + 10_000.0 * k
        events.append(op(frame, t0, 3000, cat="python_function"))
        for size in (4196, 8392) if k == 0 else (4, 8):
            corr += 1
            events.append(launch(t0 + 10 + size % 7, 5, corr, name="cudaMemcpyAsync"))
            copy = kernel("Memcpy HtoD (Pinned -> Device)", t0 + 30, 2, corr, bytes=size)
            copy["cat"] = "gpu_memcpy"
            events.append(copy)
        corr += 1
        events.append(launch(t0 + 100, 5, corr))
        events.append(kernel("gemm", t0 + 120, 2000 if k == 0 else 500, corr))
    view = llm_view(kinetoscope.load(write_trace(tmp_path / "copies.json", events)))
    assert [p.tokens for p in view.passes] == [1049, 1, 1]
    assert all("int32" in p.tokens_from for p in view.passes)


# ---- graph-replay decode -----------------------------------------------------------


@pytest.mark.parametrize("runner", [True, False])
def test_sglang_graph_replay_is_a_decode_without_the_annotations(tmp_path, runner):
    """The SGLang corpus step without its annotations (vLLM-style and `step[DECODE
    bs=32]`, renamed): one hipGraphLaunch replays the whole forward. Inside SGLang's
    `model_runner.py: forward` range, one whole-forward graph is a decode (engines
    capture those for decode batches only); without that range either, aten::argmax
    picking 32 tokens over [32, 151936] logits after the replay says so. The older code
    called the first unknown and found nothing in the second."""
    doc = json.loads(gzip.decompress(corpus(SGLANG).read_bytes()))
    for e in doc["traceEvents"]:
        name = str(e.get("name", ""))
        if name.startswith(("execute_32_context_0", "step[DECODE")) or (
            not runner and "model_runner.py" in name
        ):
            e["name"] = "scheduler step"
    view = llm_view(kinetoscope.load(write_trace(tmp_path / "bare.json", doc["traceEvents"])))
    assert view is not None
    assert view.source == ("engine ranges" if runner else "graph replays")
    (p,) = view.passes
    assert (p.phase, p.graph_launches) == ("decode", 1)
    assert p.kv_writes == 36  # store_kvcache per layer, inside the graph
    if not runner:
        assert p.tokens == 32


def test_graph_replay_without_a_token_choice_is_no_generation(tmp_path):
    """A training or inference loop replaying a captured graph, choosing nothing."""
    events = []
    for k in range(3):
        events.append(launch(1000.0 + 1000 * k, 5, k + 1, name="cudaGraphLaunch"))
        events.append(kernel("k", 1010.0 + 1000 * k, 100, k + 1))
        events.append(op("aten::add", 1200.0 + 1000 * k, 5))
    assert llm_view(kinetoscope.load(write_trace(tmp_path / "g.json", events))) is None
