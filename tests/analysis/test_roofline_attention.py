"""Roofline of attention: FLOPs from the recorded q/k/v shapes and is_causal, checked by hand.

Convention (FlashAttention-2, section 4.1): forward 4*B*H*Sq*Sk*D, halved when
is_causal with Sq == Sk; backward 2.5x forward. Minimum bytes: Q, K, V read and
O written (the math backend also writes and reads back the score matrix).
"""

from __future__ import annotations

import pytest

from kinetoscope.analysis.attention_flops import SIGNATURES
from kinetoscope.analysis.roofline import NO_CPU_PEAK, rated_ops, roofline
from kinetoscope.rules.engine import RuleContext, load_rules, run_rules
from kinetoscope.rules.roofline import peak_evidence
from kinetoscope.trace import load

from ..capture_helpers import profile_here
from ..conftest import corpus

#: a CPU run gets a verdict like a GPU run (compute- or overhead-bound; host-only without
#: any math op): the roofline evidence rides on whichever verdict fired
REGIME_RULES = ["compute-bound", "overhead-bound", "mixed", "host-only"]


def test_one_h100_sdpa_by_hand():
    # tracelens_h100 Qwen, read with `zcat | python -m json.tool`: the first
    # aten::scaled_dot_product_attention (External id 18589) has Input Dims
    # [[16, 16, 559, 64]] x 3 (q, k, v as [B, H, S, D]), c10::BFloat16, Concrete Inputs
    # ["", "", "", "", "0.", "True", "0.125", "False"]: dropout 0, is_causal True.
    # Under it _scaled_dot_product_flash_attention -> _flash_attention_forward ->
    # cudaLaunchKernel (correlation 683329) -> pytorch_flash::flash_fwd_kernel, 115.711 us.
    trace = load(corpus("gpu/tracelens_h100__Qwen_Qwen1.5-0.5B-Chat__1016005.json.gz"))
    ops, _ = rated_ops(trace)
    call = next(o for o in ops if trace.external_id[o.index] == 18589)
    assert trace.name(call.index) == "aten::scaled_dot_product_attention"
    assert call.op_class == "attention" and call.dtype == "bf16" and not call.backward
    flops = 4 * 16 * 16 * 559 * 559 * 64 // 2  # causal, Sq == Sk: half of 20,478,754,816
    assert call.flops == flops == 10_239_377_408
    assert len(call.kernels) == 1 and call.device_us == pytest.approx(115.711)
    # Q, K, V read + O written: 4 x 16*16*559*64 elements x 2 bytes
    assert call.bytes == 4 * 16 * 16 * 559 * 64 * 2 == 73_269_248
    achieved = flops / 115.711e-6  # 88.49 TFLOP/s
    assert achieved / 989.5e12 == pytest.approx(0.08943, abs=1e-5)  # H100 SXM dense bf16


def test_attention_rows_and_the_compute_bound_evidence():
    trace = load(corpus("gpu/tracelens_h100__Qwen_Qwen1.5-0.5B-Chat__1016005.json.gz"))
    roof = roofline(trace)
    (row,) = roof.of_class("attention")
    ops, unrated = rated_ops(trace)
    calls = [o for o in ops if o.op_class == "attention"]
    assert row.ops == len(calls) == 24  # 24 SDPA calls in the window, all flash, bf16
    assert row.flops == sum(o.flops for o in calls)
    assert row.share_of_peak == pytest.approx(row.achieved_flops / 989.5e12)
    # 10 flash_fwd kernels at the window's start whose launch precedes the recording:
    # attention by name, no op to read shapes from
    lost = unrated["attention"]
    assert lost.kernels == 10 and lost.calls == 0
    (finding,) = run_rules(trace, only=["compute-bound"]).findings
    texts = [e.text for e in finding.evidence]
    assert any(t.startswith("24 bf16 attention calls run at") and "of the H100 SXM bf16 peak"
               in t for t in texts)  # fmt: skip
    assert any("attention calls: 10 kernels" in t and "kernel name only" in t for t in texts)


def test_kernel_names_without_ops_are_counted_not_rated():
    # SGLang decode on MI300X: aiter's paged_attention_ll4mi kernels, no attention op recorded
    trace = load(corpus("gpu/tracelens_sglang_decode__sglang_Qwen3-8B_decode.json.gz"))
    roof = roofline(trace)
    assert roof.of_class("attention") == []
    lost = roof.unrated["attention"]
    names = {trace.name(k) for k in trace.kernels if "paged_attention" in trace.name(k)}
    assert names and lost.kernels == 72  # 36 QKV + 36 reduce kernels, each named attention
    assert set(lost.reasons) == {"no attention op recorded, attention by kernel name only"}


def test_signatures_match_torch_schemas():
    torch = pytest.importorskip("torch")
    for name, sig in SIGNATURES.items():
        op = getattr(torch.ops.aten, name.removeprefix("aten::"))
        args = [a.name for a in op.default._schema.arguments]
        assert args[sig.q : sig.q + 3] == ["query", "key", "value"], name
        assert args[sig.causal] == ("custom_mask_type" if sig.mask_type else "is_causal"), name
        if sig.attn_mask is not None:
            assert args[sig.attn_mask] in ("attn_mask", "attn_bias", "bias"), name


@pytest.fixture(scope="module")
def math_traces(tmp_path_factory):
    """`profile attention --backend math` on the CPU, with and without record_shapes."""
    pytest.importorskip("torch")
    out = {}
    for shapes in (True, False):
        folder = tmp_path_factory.mktemp("shapes" if shapes else "noshapes")
        extra = ["--record-shapes"] if shapes else []
        result = profile_here("attention", "--backend", "math", "--device", "cpu",
                              "--warmup", "1", *extra, "--out", str(folder))  # fmt: skip
        assert result.returncode == 0, result.stderr[-2000:]
        (path,) = (folder / "04_attention").glob("*.json")
        out[shapes] = load(path)
    return out


def test_cpu_math_backend_is_rated_without_a_peak(math_traces):
    trace = math_traces[True]
    roof = roofline(trace)
    assert roof.on_cpu and roof.peak_note == NO_CPU_PEAK
    (row,) = roof.rows  # the workload's matmuls are all inside the SDPA call
    # defaults: batch 2, 4 heads, seq 128, head dim 64, is_causal=True, 3 active steps
    per_call = 4 * 2 * 4 * 128 * 128 * 64 // 2
    assert (row.op_class, row.dtype, row.ops) == ("attention", "fp32", 3)
    assert row.flops == 3 * per_call
    # math backend: Q, K, V, O plus the 2x4x128x128 score matrix written and read back
    assert row.bytes == 3 * (4 * 2 * 4 * 128 * 64 + 2 * 2 * 4 * 128 * 128) * 4
    calls = [o for o in rated_ops(trace)[0] if o.op_class == "attention"]
    assert row.device_us == sum(trace.dur[o.index] for o in calls) > 0  # the ops' CPU time
    line = next(e.text for e in _verdict_evidence(trace) if "attention calls" in e.text)
    assert line.startswith("3 fp32 attention calls run at") and "on the CPU" in line
    assert NO_CPU_PEAK in line


def test_cpu_math_backend_without_shapes_is_counted_not_rated(math_traces):
    trace = math_traces[False]
    roof = roofline(trace)
    assert roof.rows == []
    lost = roof.unrated["attention"]
    assert lost.calls == 3 and dict(lost.reasons) == {"no shapes recorded": 3}
    assert any("3 attention calls" in e.text and "not rated (no shapes recorded: 3)" in e.text
               for e in _verdict_evidence(trace))  # fmt: skip


def _verdict_evidence(trace):
    """The share-of-peak evidence the host-only verdict carries (`rules.roofline`), and a
    check that the verdict, where the window is judged, carries it. A recording on a
    loaded machine can leave the window not judged (its threads waited for a CPU most of
    the time: 98% in run 119, the trust line says so), with no regime finding at all."""
    evidence = peak_evidence(RuleContext(trace, load_rules()["host-only"], {}))
    for finding in run_rules(trace, only=REGIME_RULES).findings:  # at most the one verdict
        assert [e.text for e in evidence] == [
            e.text for e in finding.evidence if e.text in {x.text for x in evidence}
        ]
    return evidence


def _args(dims, types, concrete=()):
    from kinetoscope.analysis.recorded_args import RecordedArgs

    return RecordedArgs(list(dims), list(types), list(concrete))


SDPA = "aten::scaled_dot_product_attention"
NO_SCALARS = [[]] * 5  # attn_mask, dropout_p, is_causal, scale, enable_gqa: no tensors


def test_is_causal_not_recorded_is_not_halved_and_said():
    from kinetoscope.analysis.attention_flops import attention_cost

    cost = attention_cost(SDPA, _args([[2, 4, 8, 16]] * 3 + NO_SCALARS, ["float"] * 3), False)
    assert cost.flops == 4 * 2 * 4 * 8 * 8 * 16  # full attention
    assert cost.notes == ("is_causal not recorded (torch < 2.1), counted as full attention",)


def test_causal_with_a_kv_cache_is_not_halved():
    from kinetoscope.analysis.attention_flops import attention_cost

    # one query token against 10 cached keys, 8 query heads sharing 2 KV heads (GQA)
    dims = [[1, 8, 1, 16], [1, 2, 10, 16], [1, 2, 10, 16], *NO_SCALARS]
    concrete = ["", "", "", "", "0.", "True", "", "True"]
    cost = attention_cost(SDPA, _args(dims, ["c10::BFloat16"] * 3, concrete), False)
    assert cost.flops == 2 * 8 * 1 * 10 * (16 + 16)
    assert cost.bytes == (8 * 16 + 2 * 10 * 16 * 2 + 8 * 16) * 2  # q, k, v, o in bf16
    assert "Sq != Sk" in cost.notes[0]


def test_kernel_level_ops_read_b_s_h_d_and_backward_is_2_5x():
    from kinetoscope.analysis.attention_flops import attention_cost

    # _flash_attention_backward(grad_out, query, key, value, ...): q/k/v as [B, S, H, D]
    dims = [[2, 64, 4, 32]] * 5 + [[]] * 12
    concrete = [""] * 11 + ["False"]
    cost = attention_cost("aten::_flash_attention_backward", _args(dims, ["c10::Half"] * 5,
                                                                    concrete), False)  # fmt: skip
    assert cost.backward and cost.flops == 2.5 * 4 * 2 * 4 * 64 * 64 * 32
    assert cost.bytes == 2 * 4 * (2 * 64 * 4 * 32) * 2  # Q, K, V, O, dO read; dQ, dK, dV written
