"""The LLM view (analysis/llm.py, rules/llm.py): prefill and decode passes, TTFT, decode
latency, KV-cache traffic, on the corpus' LLM traces, CPU generate() runs and small traces
built in code. Every expectation below was read from the trace before running the tool."""

from __future__ import annotations

import importlib.util
import json

import pytest

import kinetoscope
from kinetoscope.analysis.llm import llm_view
from kinetoscope.rules.engine import run_rules

from ..conftest import corpus, kernel, launch, op, write_trace

QWEN = {
    "h100": "gpu/tracelens_h100__Qwen_Qwen1.5-0.5B-Chat__1016005.json.gz",
    "mi300": "gpu/tracelens_mi300__Qwen_Qwen1.5-0.5B-Chat__1016005.json.gz",
}
SGLANG = "gpu/tracelens_sglang_decode__sglang_Qwen3-8B_decode.json.gz"
VLLM = "gpu/tracelens_vllm_prefilldecode_piecewise__graph_execution.json.gz"
B200 = "gpu/tracelens_b200__eager_trace.json.gz"
LLM_RULES = ["llm-decode-overhead", "llm-kv-cache-concat"]


def _fired(trace) -> set[str]:
    return {f.id for f in run_rules(trace, only=LLM_RULES).findings}


# ---- corpus -----------------------------------------------------------------


@pytest.mark.parametrize("device", sorted(QWEN))
def test_qwen_inference_is_one_prefill_of_16_prompts_of_559_tokens(device):
    """One ProfilerStep holding one Qwen2 forward: its aten::embedding reads input ids of
    shape [16, 559], and transformers' cache_utils update frames (24, one per layer) say a
    KV cache was filled. No forward on 1 token: no decode pass. transformers 4.49 stores the
    first update without torch.cat (the 49 aten::cat are 48 rotate_half + 1 mask)."""
    view = llm_view(kinetoscope.load(corpus(QWEN[device])))
    assert view is not None and view.source == "shapes"
    (prefill,) = view.passes
    assert (prefill.phase, prefill.tokens, prefill.batch) == ("prefill", 16 * 559, 16)
    assert view.ttft_us == prefill.dur and prefill.kernels > 1000
    assert view.decode_latency is None
    assert prefill.kv_appends == 0 and prefill.graph_launches == 0


@pytest.mark.parametrize("device", sorted(QWEN))
def test_qwen_prefill_only_fires_no_llm_rule(device):
    assert _fired(kinetoscope.load(corpus(QWEN[device]))) == set()


def test_sglang_decode_step_is_graph_replayed_and_blocked():
    """`execute_32_context_0(sq0sk0...)_generation_32(sq32sk32785...)`: 0 prefill and 32
    decode requests, one token each. One hipGraphLaunch replays the layer stack; its 36
    store_kvcache kernels write each of Qwen3-8B's 36 layers' keys/values into the paged
    cache; two 256-byte DtoD copies follow the sampling. The host sits 463 ms in one
    hipMemcpyWithStream of the 466 ms step."""
    view = llm_view(kinetoscope.load(corpus(SGLANG)))
    assert view is not None and view.source == "annotations"
    (step,) = view.passes
    assert (step.phase, step.tokens, step.batch) == ("decode", 32, 32)
    assert step.graph_launches == 1 and step.kv_writes == 36 and step.kv_appends == 0
    assert (step.dtod_copies, step.dtod_bytes) == (2, 512)
    assert step.blocked_us > 0.99 * 463_000
    assert view.decode_latency is not None and view.ttft_us is None


def test_sglang_decode_is_not_called_launch_bound():
    """Already replayed as a graph, and the host is blocked, not launching."""
    assert _fired(kinetoscope.load(corpus(SGLANG))) == set()


def test_vllm_piecewise_step_mixes_prefill_chunks_and_decode():
    """`execute_8192_context_9(sq8155...)_generation_37(sq37...)`: 9 prefill requests
    (8155 query tokens) and 37 decode requests (37 tokens) in one 8192-token step. 25
    hipGraphLaunch calls replay the pieces between the 24 eager attention layers, each of
    which writes the paged cache once (reshape_and_cache_flash)."""
    view = llm_view(kinetoscope.load(corpus(VLLM)))
    assert view is not None and view.source == "annotations"
    (step,) = view.passes
    assert (step.phase, step.tokens, step.batch) == ("mixed", 8155 + 37, 46)
    assert step.graph_launches == 25 and step.kv_writes == 24
    assert view.ttft_us is None and view.decode_latency is None
    assert _fired(kinetoscope.load(corpus(VLLM))) == set()


def test_vllm_b200_older_annotation_is_one_prefill_request():
    """`execute_context_1(888_788544)_generation_0(0)`: one prefill request of 888 tokens
    (788544 = 888 x 888 query x key positions), no decode; aten::embedding reads a flat
    [888] token list. 36 reshape_and_cache_flash kernels, one per layer of the 36."""
    view = llm_view(kinetoscope.load(corpus(B200)))
    assert view is not None and view.source == "annotations"
    (step,) = view.passes
    assert (step.phase, step.tokens, step.batch) == ("prefill", 888, 1)
    assert step.kv_writes == 36 and step.graph_launches == 0
    assert view.ttft_us == step.dur


@pytest.mark.parametrize(
    "relative",
    [
        "gpu/alexnet_train.json.gz",
        "gpu/resnet50_dataloader_workers0.pt.trace.json.gz",
        "gpu/tracelens_h100__gaunernst_bert-small-uncased__1016001.json.gz",
        "gpu/switch_transformer_moe_a100.json.gz",
    ],
)
def test_no_generation_no_llm_view(relative):
    """Training loops have no embedding-led forwards or step annotations; BERT embeds
    (3 embeddings, one forward) but keeps no cache and never decodes; the Switch
    Transformer forward is one full-sequence pass without a cache either."""
    trace = kinetoscope.load(corpus(relative))
    assert llm_view(trace) is None
    outcome = run_rules(trace, only=LLM_RULES)
    assert not outcome.findings and not outcome.not_checked  # the rules do not apply
    assert kinetoscope.explain(corpus(relative)).llm == {}


# ---- traces built in code: the decode-overhead judgement ----------------------

EMB_TYPES = ["float", "long int", "Scalar", "Scalar", "Scalar"]


def _generate_trace(tmp_path, graphs=False, blocked=False):
    """One step: a prefill of 8 tokens, then 4 decode passes of 2 ms each launching 20
    kernels of 3 us (or one graph launch replaying them), the device idle in between."""
    events = [op("ProfilerStep#1", 0, 10_000, cat="user_annotation")]
    corr = 0
    for k in range(5):
        t0 = 100 + 2000 * k
        seq = 8 if k == 0 else 1
        events.append(
            op(
                "aten::embedding",
                t0,
                10,
                **{"Input Dims": [[1000, 64], [1, seq], [], [], []], "Input type": EMB_TYPES},
            )
        )
        events.append(op("aten::linear", t0 + 20, 1500))
        if blocked:
            events.append(op("cudaStreamSynchronize", t0 + 300, 1600, cat="cuda_runtime"))
        for j in range(20):
            corr += 1
            ts = t0 + 30 + 60 * j
            if graphs and j:
                events.append(kernel(f"k{j}", ts + 5, 3, corr - j))
                continue
            name = "cudaGraphLaunch" if graphs else "cudaLaunchKernel"
            events.append(launch(ts, 10, corr, name=name))
            events.append(kernel(f"k{j}", ts + 5, 3, corr))
    return kinetoscope.load(write_trace(tmp_path / "gen.json", events))


def test_launch_bound_decode_fires_with_static_cache_and_compile_advice(tmp_path):
    trace = _generate_trace(tmp_path)
    view = llm_view(trace)
    assert [p.phase for p in view.passes] == ["prefill"] + ["decode"] * 4
    assert [p.kernels for p in view.passes] == [20] * 5
    findings = run_rules(trace, only=["llm-decode-overhead"]).findings
    assert [f.id for f in findings] == ["llm-decode-overhead"]
    finding = findings[0]
    assert finding.measured["decode_passes"] == 4
    # 4 x 60 us of kernels over 3 passes of 2 ms and the last one, cut by the step end at 1.9 ms
    assert finding.measured["device_ratio"] == pytest.approx(4 * 60 / 7900, abs=1e-4)
    assert 'mode="reduce-overhead"' in finding.suggestion and "static" in finding.suggestion


def test_graph_replayed_decode_does_not_fire(tmp_path):
    trace = _generate_trace(tmp_path, graphs=True)
    assert all(p.graph_launches == 1 for p in llm_view(trace).passes)
    assert _fired(trace) == set()


def test_blocked_decode_is_not_launch_bound(tmp_path):
    """The host waits in a sync 1.6 ms of each 2 ms pass: it is not the launch path."""
    assert _fired(_generate_trace(tmp_path, blocked=True)) == set()


# ---- CPU: `profile transformer --mode generate` ------------------------------

needs_transformers = pytest.mark.skipif(
    importlib.util.find_spec("torch") is None or importlib.util.find_spec("transformers") is None,
    reason="needs torch and transformers (pip install 'kinetoscope[capture,llm]')",
)


@needs_transformers
def test_generate_mode_with_shapes_gives_prefill_and_decode_numbers(tmp_path):
    """Each of the 3 recorded steps is one generate(): a prefill on the 8-token prompt,
    then 2 decode passes on 1 token (new_tokens=3: the prefill yields the first token).
    DynamicCache appends per layer per pass with torch.cat on keys and values: the
    prefill's from an empty tensor, then [1, 1, T, 64] + [1, 1, 1, 64] (hidden 64 = 1 head
    of 64), fp32: 2 x (T + 1) x 64 x 4 bytes with T = 8, then 9."""
    from kinetoscope.capture.runner import CaptureOptions, run_workload

    overrides = {"layers": 1, "hidden": 64, "seq": 8, "new_tokens": 3, "mode": "generate"}
    options = CaptureOptions(device="cpu", out=tmp_path, record_shapes=True)
    result = run_workload("transformer", overrides, options)
    trace = kinetoscope.load(result.written[0].trace)
    view = llm_view(trace)
    assert view.source == "shapes"
    assert [p.phase for p in view.passes] == ["prefill", "decode", "decode"] * 3
    assert [p.tokens for p in view.passes] == [8, 1, 1] * 3
    assert [p.kv_appends for p in view.passes] == [2, 2, 2] * 3
    assert [p.kv_append_bytes for p in view.passes] == [2 * 8 * 256, 2 * 9 * 256, 2 * 10 * 256] * 3
    assert view.ttft_us > 0 and view.decode_latency.median > 0
    outcome = run_rules(trace, only=LLM_RULES)
    assert [f.id for f in outcome.findings] == ["llm-kv-cache-concat"]
    assert [s.id for s in outcome.not_checked] == ["llm-decode-overhead"]  # no device
    section = kinetoscope.explain(result.written[0].trace).llm
    assert section["phases"] == {
        "prefill": 3, "chunked prefill": 0, "decode": 6, "mixed": 0, "unknown": 0
    }  # fmt: skip


@needs_transformers
def test_profile_cli_generate_mode_reports_llm_phases(tmp_path):
    """Without record_shapes the first forward of each step is the prefill."""
    from ..capture_helpers import profile_here

    done = profile_here(
        "transformer", "--mode", "generate", "--device", "cpu", "--layers", "1",
        "--hidden", "64", "--seq", "8", "--new-tokens", "3", "--out", str(tmp_path),
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert "LLM phases" in done.stdout and "3 prefill, 6 decode (from order)" in done.stdout
    (path,) = (tmp_path / "05_llm").glob("*_generate_*.json")
    view = llm_view(kinetoscope.load(path))
    assert [p.phase for p in view.passes] == ["prefill", "decode", "decode"] * 3
    assert all(p.tokens is None for p in view.passes)


def test_html_report_has_the_llm_section_only_for_generations():
    pytest.importorskip("jinja2")
    from kinetoscope.report.html import render_html

    page = render_html(kinetoscope.explain(corpus(SGLANG)))
    assert "<h2>LLM phases</h2>" in page and "execute_32_context_0" in page
    assert "LLM phases" not in render_html(kinetoscope.explain(corpus("gpu/alexnet_train.json.gz")))


# ---- engine model-runner ranges: piecewise CUDA graphs --------------------------

EXECUTE_MODEL = "vllm/v1/worker/gpu_model_runner.py(3380): execute_model"


def _vllm_piecewise_trace(
    tmp_path, prefill_kernel_us=200.0, name="vllm.json", decode_kernel_us=100.0, rank=None,
    frame=(EXECUTE_MODEL, "python_function"),
):  # fmt: skip
    """A vLLM engine window without step annotations (the shape of a `vllm bench latency`
    profile with with_stack): ten `execute_model` Python ranges 25 ms apart. The first,
    the prompt, runs eagerly (a 40-token flat `aten::embedding`, 100 launched kernels of
    `prefill_kernel_us`); each later one replays 81 piecewise CUDA-graph pieces (one
    `cudaGraphLaunch` each, 2 kernels of 100 us per piece: 16.2 ms of device work) and
    records no embedding, which the graph holds, but vLLM's eager attention op on a
    query of 8 tokens (8 decode requests)."""
    events, corr = [], 0
    for k in range(10):
        t0 = 1000.0 + 25_000.0 * k
        events.append(op(frame[0], t0, 5000, cat=frame[1]))
        cursor = t0 + 100
        if k == 0:
            dims = {"Input Dims": [[1000, 64], [40]], "Input type": ["c10::BFloat16", "long"]}
            events.append(op("aten::embedding", t0 + 10, 20, **dims))
            events.append(op("aten::linear", t0 + 40, 20))
        if k:  # vLLM's eager attention between the pieces: query [8 tokens, 64 heads, 64]
            dims = {"Input Dims": [[8, 64, 64], [8, 8, 64], [8, 8, 64], [8, 64, 64]]}
            events.append(op("vllm::unified_attention_with_output", t0 + 60, 20, **dims))
        for j in range(100 if k == 0 else 81):
            corr += 1
            ts = t0 + 50 + 45 * j
            name_ = "cudaLaunchKernel" if k == 0 else "cudaGraphLaunch"
            events.append(launch(ts, 10, corr, name=name_))
            for _ in range(1 if k == 0 else 2):
                cursor = max(cursor, ts + 5)
                dur = prefill_kernel_us if k == 0 else decode_kernel_us
                events.append(kernel(f"piece{j}", cursor, dur, corr))
                cursor += dur
    top = {} if rank is None else {"distributedInfo": {"rank": rank, "world_size": 4}}
    return write_trace(tmp_path / name, events, **top)


def test_piecewise_graph_decodes_are_one_pass_per_execute_model(tmp_path):
    """81 graph launches under one execute_model are one decode pass, not 81 passes; the
    prefill is the first and longest step (20 ms of device work vs 16.2 ms each later)."""
    view = llm_view(kinetoscope.load(_vllm_piecewise_trace(tmp_path)))
    assert view is not None and (view.source, view.engine) == ("engine ranges", "vLLM")
    assert [p.phase for p in view.passes] == ["prefill"] + ["decode"] * 9
    assert [p.graph_launches for p in view.passes] == [0] + [81] * 9
    assert [p.kernels for p in view.passes] == [100] + [162] * 9
    assert [p.tokens for p in view.passes] == [40] + [8] * 9
    assert [round(p.device_busy_us) for p in view.passes] == [20_000] + [16_200] * 9
    assert "order and device time" in view.phase_from and "20.0 ms" in view.phase_from
    assert view.ttft_us == pytest.approx(view.passes[0].dur)
    assert view.tpot_us == pytest.approx(sum(p.dur for p in view.passes[1:]) / 9)
    totals = view.totals()
    assert (totals["decode"].passes, totals["decode"].graph_launches) == (9, 9 * 81)
    assert totals["prefill"].tokens == 40 and totals["decode"].tokens == 72


@pytest.mark.parametrize(
    ("frame", "engine"),
    [
        (("gpu_model_runner: forward", "user_annotation"), "vLLM"),
        (("vllm/worker/model_runner.py(1650): execute_model", "python_function"), "vLLM"),
        (("sglang/srt/model_executor/model_runner.py(3123): forward", "python_function"), "SGLang"),
        (("text_generation_server/models/flash_causal_lm.py(1800): generate_token",
          "python_function"), "TGI"),
    ],
)  # fmt: skip
def test_each_engine_range_is_one_pass(tmp_path, frame, engine):
    """vLLM's custom-scope annotation and v0 runner, SGLang's model runner, TGI's
    generate_token: each range one pass, the same 1 prefill + 9 decodes."""
    view = llm_view(kinetoscope.load(_vllm_piecewise_trace(tmp_path, frame=frame)))
    assert (view.source, view.engine) == ("engine ranges", engine)
    assert [p.phase for p in view.passes] == ["prefill"] + ["decode"] * 9


def test_engine_steps_of_one_kind_stay_unknown(tmp_path):
    """When the first step is no longer than the later ones (10 ms vs 16.2 ms: a window
    that starts mid-generation), order says nothing: the phases stay unknown."""
    trace = kinetoscope.load(_vllm_piecewise_trace(tmp_path, prefill_kernel_us=100.0))
    view = llm_view(trace)
    assert [p.phase for p in view.passes] == ["unknown"] * 10
    assert view.ttft_us is None and view.tpot_us is None
    assert "not longer than every later one" in view.phase_from


def test_engine_passes_render_in_every_format(tmp_path):
    """The text, Markdown, JSON and HTML reports all carry the per-phase table, TTFT and
    TPOT; without ProfilerStep the passes are the steps."""
    from kinetoscope.report.html import render_html
    from kinetoscope.report.markdown import render_markdown
    from kinetoscope.report.text import render_text

    report = kinetoscope.explain(_vllm_piecewise_trace(tmp_path))
    assert report.llm["phase_totals"]["decode"]["graph_launches"] == 729
    assert report.llm["has_profiler_steps"] is False
    assert report.to_dict()["llm"]["tpot_us"] == pytest.approx(report.llm["tpot_us"])
    text = render_text(report)
    assert "1 prefill, 9 decode (from vLLM engine ranges)" in text
    assert "time per output token" in text and "each pass below is one step" in text
    md = render_markdown(report)
    assert "## LLM phases" in md and "| decode | 9 | 72 |" in md
    pytest.importorskip("jinja2")
    page = render_html(report)
    assert "time per output token" in page and '<td class="name">decode</td>' in page


@needs_transformers
def test_tiny_gpt2_generate_recorded_here_is_prefill_then_decodes(tmp_path):
    """A random 1-layer GPT-2 (no download) generates 4 tokens for 2 prompts of 5 tokens,
    recorded with shapes: GPT-2 embeds tokens (wte) and positions (wpe) back to back, one
    forward; the prompt's ids are [2, 5] (10 tokens), each later forward's [2, 1]. The
    DynamicCache appends keys and values with one cat each per pass: [2 batch, 2 heads,
    T, 16] fp32 = 2 x 256 x T bytes for T = 5, 6, 7, 8."""
    import torch
    import transformers

    torch.manual_seed(0)
    config = transformers.GPT2Config(
        n_layer=1, n_embd=32, n_head=2, vocab_size=100, n_positions=64,
        bos_token_id=0, eos_token_id=None,
    )  # fmt: skip
    model = transformers.GPT2LMHeadModel(config).eval()
    ids = torch.randint(1, 100, (2, 5))
    activities = [torch.profiler.ProfilerActivity.CPU]
    profiling = torch.profiler.profile(activities=activities, record_shapes=True)
    with profiling as prof, torch.no_grad():
        out = model.generate(
            ids, attention_mask=torch.ones_like(ids), max_new_tokens=4, min_new_tokens=4,
            do_sample=False, pad_token_id=0,
        )  # fmt: skip
    assert out.shape == (2, 9)
    path = tmp_path / "gpt2_generate.json"
    prof.export_chrome_trace(str(path))
    view = llm_view(kinetoscope.load(path))
    assert view is not None and view.source == "shapes"
    assert [p.phase for p in view.passes] == ["prefill", "decode", "decode", "decode"]
    assert [p.tokens for p in view.passes] == [10, 2, 2, 2]
    assert [p.batch for p in view.passes] == [2, 2, 2, 2]
    assert [p.kv_appends for p in view.passes] == [2, 2, 2, 2]
    assert [p.kv_append_bytes for p in view.passes] == [2 * 256 * t for t in (5, 6, 7, 8)]
    assert view.ttft_us == view.passes[0].dur and view.tpot_us > 0
    totals = view.totals()
    assert (totals["prefill"].tokens, totals["decode"].tokens) == (10, 6)


# ---- diff: per-phase time, TTFT and TPOT change ---------------------------------


def test_diff_compares_phases_ttft_and_tpot(tmp_path):
    """A: the prompt's 100 kernels of 200 us (20 ms); B: of 300 us (30 ms), the same 9
    graph-replayed decodes. The diff's LLM section says TTFT grew and decode did not."""
    from kinetoscope.compare.diff import diff_runs
    from kinetoscope.compare.runs import load_run
    from kinetoscope.report.diff_render import to_json, to_markdown, to_text

    a = _vllm_piecewise_trace(tmp_path, 200.0, "a.json")
    b = _vllm_piecewise_trace(tmp_path, 300.0, "b.json")
    d = diff_runs(load_run(a), load_run(b))
    by_phase = {row["phase"]: row for row in d.llm["phases"]}
    assert set(by_phase) == {"prefill", "decode"}
    assert by_phase["prefill"]["a"]["device_per_pass_us"] == pytest.approx(20_000)
    assert by_phase["prefill"]["b"]["device_per_pass_us"] == pytest.approx(30_000)
    assert by_phase["decode"]["a"]["device_per_pass_us"] == pytest.approx(16_200)
    assert by_phase["decode"]["b"]["device_per_pass_us"] == pytest.approx(16_200)
    assert d.llm["ttft_us"]["b"] > d.llm["ttft_us"]["a"] + 9_000
    assert d.llm["tpot_us"]["a"] == pytest.approx(d.llm["tpot_us"]["b"])
    text = to_text(d, width=160)
    assert "LLM phases (A -> B)" in text and "time to first token" in text
    assert "time per output token" in text and "(+0%)" in text
    assert "## LLM phases (A -> B)" in to_markdown(d)
    assert '"tpot_us"' in to_json(d)
    assert (
        "Generation: time to first token 20.1 ms -> 30.1 ms (+50%), "
        "time per output token 16.3 ms -> 16.3 ms (+0%)."
    ) in d.conclusion
    assert d.conclusion.endswith("the slowdown is on the device (compute kernels).")


def test_diff_of_training_runs_has_no_llm_section():
    from kinetoscope.compare.diff import diff_runs
    from kinetoscope.compare.runs import load_run
    from kinetoscope.report.diff_render import to_text

    d = diff_runs(
        load_run(corpus("gpu/compare_base.json.gz")), load_run(corpus("gpu/compare_test.json.gz"))
    )
    assert d.llm == {} and "LLM phases" not in to_text(d)


# ---- tensor parallel: passes lined up across ranks -------------------------------


def test_tensor_parallel_ranks_line_up_passes(tmp_path):
    """4 ranks of one engine, each 1 prefill + 9 decodes; rank 2's decode kernels take
    110 us instead of 100 (17.8 ms of device work per decode instead of 16.2 ms): every
    decode pass is slowest on rank 2, by 1.62 ms."""
    from kinetoscope.ranks.multirank import explain_ranks

    folder = tmp_path / "tp"
    folder.mkdir()
    for r in range(4):
        _vllm_piecewise_trace(folder, 300.0, f"rank{r}.json", 110.0 if r == 2 else 100.0, r)
    doc = json.loads(explain_ranks([folder], jobs=1, config={}, fmt="json"))
    aligned = doc["llm_passes"]
    assert aligned["ranks"] == [0, 1, 2, 3] and aligned["aligned"] == 10
    assert aligned["phases_disagree"] == []
    assert [p["phase"] for p in aligned["passes"]] == ["prefill"] + ["decode"] * 9
    decodes = aligned["passes"][1:]
    assert all(p["slowest_rank"] == 2 for p in decodes)
    assert all(p["spread_us"] == pytest.approx(81 * 2 * 10) for p in decodes)
    assert all(p["graph_launches"] == {str(r): 81 for r in range(4)} for p in decodes)
    text = explain_ranks([folder], jobs=1, config={}, fmt="text")
    assert "LLM passes across ranks" in text and "rank 2 is the slowest in 9 of them" in text


def test_training_ranks_have_no_llm_passes():
    from kinetoscope.ranks.llm import align_passes
    from kinetoscope.ranks.summary import summarize_rank

    path = corpus("multirank/dlrm_8ranks/worker0_step_12.1694128201545.pt.trace.json.gz")
    summary = summarize_rank(str(path))
    assert summary.llm_passes == [] and align_passes({0: summary}) is None


# ---- torch.compile'd generate(): forwards from the compiled frame's calls -------------


def _compiled_generate_trace(tmp_path, choose="aten::argmax", graphs=False):
    """The shape of `profile transformer --mode generate --compile` on the CPU (Inductor
    fuses the embedding away: no aten::embedding): one step, one `generate` annotation,
    three calls of compiled frame 0 (`Torch-Compiled Region: 0/0`, then its recompiles
    0/1 and 0/2 for the decode shapes), each followed on the host by the token choice
    (`choose`) and the input_ids cat. With `graphs`, each call replays its forward as
    one CUDA graph (20 kernels of 5 us)."""
    events = [
        op("ProfilerStep#1", 0, 10_000, cat="user_annotation"),
        op("generate", 10, 9_900, cat="user_annotation"),
    ]
    corr = 0
    for k in range(3):
        t0 = 100 + 3000 * k
        events.append(op(f"Torch-Compiled Region: 0/{k}", t0, 2000))
        events.append(op("aten::mm", t0 + 50, 1000 if k == 0 else 300))
        if graphs:
            corr += 1
            events.append(launch(t0 + 1500, 10, corr, name="cudaGraphLaunch"))
            events += [kernel(f"k{j}", t0 + 1520 + 10 * j, 5, corr) for j in range(20)]
        if choose:
            events.append(op(choose, t0 + 2100, 10))
        events.append(op("aten::cat", t0 + 2200, 10))
    return kinetoscope.load(write_trace(tmp_path / "compiled.json", events))


@pytest.mark.parametrize("choose", ["aten::argmax", "aten::multinomial"])
def test_compiled_generate_forwards_are_the_compiled_frame_calls(tmp_path, choose):
    view = llm_view(_compiled_generate_trace(tmp_path, choose))
    assert view is not None and view.source == "order"
    assert [p.phase for p in view.passes] == ["prefill", "decode", "decode"]
    assert [p.label for p in view.passes] == [
        f"forward {k + 1} (Torch-Compiled Region: 0/{k})" for k in range(3)
    ]
    assert "Torch-Compiled Region" in view.phase_from


def test_compiled_graph_replays_belong_to_their_forward(tmp_path):
    """torch.compile mode reduce-overhead: one cudaGraphLaunch inside each compiled call,
    so each pass has 1 replay and its 20 kernels (the older code found no pass at all:
    no aten::embedding is recorded)."""
    trace = _compiled_generate_trace(tmp_path, graphs=True)
    view = llm_view(trace)
    assert [(p.graph_launches, p.kernels) for p in view.passes] == [(1, 20)] * 3
    assert _fired(trace) == set()  # graph-replayed decode: not called launch-bound


def test_compiled_loop_without_token_choice_is_no_generation(tmp_path):
    """A diffusion denoising loop or any repeated compiled call: no token is chosen
    between the calls, so they are not decode passes."""
    assert llm_view(_compiled_generate_trace(tmp_path, choose=None)) is None


def test_backward_means_training_not_generation(tmp_path):
    """Two embedding forwards in one step, a token chosen (argmax) after each, with a
    backward: gradient accumulation. Without the backward they are a prompt and a
    decode; without the argmax as well, two forwards that choose nothing (no shapes, no
    cache): no generation."""
    events = [op("ProfilerStep#1", 0, 10_000, cat="user_annotation")]
    for k in range(2):
        t0 = 100 + 4000 * k
        events.append(op("aten::embedding", t0, 10))
        events.append(op("aten::linear", t0 + 20, 1000))
        events.append(op("aten::argmax", t0 + 1100, 10))
        events.append(op("autograd::engine::evaluate_function: MmBackward0", t0 + 2000, 500))
    trace = kinetoscope.load(write_trace(tmp_path / "accum.json", events))
    assert llm_view(trace) is None
    without = [e for e in events if not e["name"].startswith("autograd")]
    view = llm_view(kinetoscope.load(write_trace(tmp_path / "fwd.json", without)))
    assert [p.phase for p in view.passes] == ["prefill", "decode"]
    assert "chosen" in view.evidence
    plain = [e for e in without if e["name"] != "aten::argmax"]
    assert llm_view(kinetoscope.load(write_trace(tmp_path / "plain.json", plain))) is None


@pytest.mark.parametrize(
    ("name", "phase", "tokens", "batch"),
    [
        # 1 prefill request whose 512 queries attend to 2048 keys: 1536 were cached by
        # earlier chunks (or a prefix-cache hit)
        ("execute_512_context_1(sq512sk2048sqsq262144sqsk1048576)_generation_0(sq0sk0sqsq0sqsk0)",
         "chunked prefill", 512, 1),
        # the whole prompt at once: queries = keys
        ("execute_512_context_1(sq512sk512sqsq262144sqsk262144)_generation_0(sq0sk0sqsq0sqsk0)",
         "prefill", 512, 1),
        # the older form: 300 x 900 = 270000 query x key positions for 300 queries
        ("execute_context_1(300_270000)_generation_0(0)", "chunked prefill", 300, 1),
        ("execute_context_1(300_90000)_generation_2(2)", "mixed", 302, 3),
    ],
)  # fmt: skip
def test_annotation_phase_names_chunked_prefill(tmp_path, name, phase, tokens, batch):
    events = [op(name, 0, 1000, cat="user_annotation"), op("aten::linear", 10, 500)]
    view = llm_view(kinetoscope.load(write_trace(tmp_path / "chunk.json", events)))
    (step,) = view.passes
    assert (step.phase, step.tokens, step.batch) == (phase, tokens, batch)
