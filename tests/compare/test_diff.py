"""`diff` on real pairs: the corpus pairs, a cross-vendor pair, and CPU eager vs compiled."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys

import pytest

import kinetoscope
from kinetoscope.compare.diff import diff_runs
from kinetoscope.compare.runs import load_run
from kinetoscope.report.diff_render import RENDERERS
from kinetoscope.report.diff_sections import sections

from ..capture_helpers import run_here
from ..conftest import corpus, kernel, launch, op, write_trace

QWEN_H100 = "gpu/tracelens_h100__Qwen_Qwen1.5-0.5B-Chat__1016005.json.gz"
QWEN_MI300 = "gpu/tracelens_mi300__Qwen_Qwen1.5-0.5B-Chat__1016005.json.gz"


def _diff(a, b):
    return diff_runs(load_run(a), load_run(b))


def _ops(d, status):
    return {r.name for r in d.ops if r.status == status}


def test_compare_base_vs_test():
    d = _diff(corpus("gpu/compare_base.json.gz"), corpus("gpu/compare_test.json.gz"))
    # both traces hold ProfilerStep#1009 and #1010 of the same length
    assert [(p.a.number, p.b.number) for p in d.steps] == [(1009, 1009), (1010, 1010)]
    assert d.a.step_time_us == d.b.step_time_us == pytest.approx((100298 + 122149) / 2)
    # B's step 1010 runs three more host ops (All2All_Pooled_Req is 311 us long)
    assert _ops(d, "appeared") == {"All2All_Pooled_Req", "AddmmBackward0", "CatBackward0"}
    assert not _ops(d, "vanished")
    assert d.steps[1].b.host_busy_us > d.steps[1].a.host_busy_us + 300
    # same kernels by name; the FillFunctor kernel (208 + 207 us) is identical
    assert d.kernels.comparable
    assert not d.kernels.by_status("new") and not d.kernels.by_status("gone")
    fill = next(r for r in d.kernels.rows if "FillFunctor" in r.key)
    assert fill.status == "unchanged" and fill.us_a == pytest.approx(207.5)
    # no devices, versions or settings recorded differently: the conclusion says so first
    assert d.conclusion.startswith("No difference in the recorded environment")
    assert "B takes about as long as A per step" in d.conclusion
    assert "All2All_Pooled_Req" in d.conclusion


def test_resnet_dataloader_workers_pair():
    d = _diff(
        corpus("gpu/resnet50_dataloader_workers0.pt.trace.json.gz"),
        corpus("gpu/resnet50_dataloader_workers4.pt.trace.json.gz"),
    )
    # median step 176 ms with num_workers=0, 127 ms with 4; device busy ~98 vs ~102 ms
    assert d.a.step_time_us / d.b.step_time_us == pytest.approx(1.39, abs=0.02)
    assert d.b.device_busy_us == pytest.approx(d.a.device_busy_us, rel=0.05)
    assert d.a.host_time_us - d.b.host_time_us > 50_000
    # the single-process loader's __next__ (45 ms self CPU per step) is replaced
    gone = "enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__"
    new = "enumerate(DataLoader)#_MultiProcessingDataLoaderIter.__next__"
    assert gone in _ops(d, "vanished") and new in _ops(d, "appeared")
    assert d.kernels.comparable and len(d.kernels.by_status("unchanged")) > 40
    # cuDNN picked the "small" instead of the "medium" variant of one conv kernel
    (swap,) = d.kernels.by_status("replaced")
    assert "exp_medium_nhwc_tn" in swap.example and "exp_small_nhwc_tn" in swap.replacement
    # the decomposition names the cause (diff-explains tests check its numbers)
    assert "B is 1.4x faster per step" in d.conclusion
    assert "The gain is data wait" in d.conclusion
    # the verdict moved: data wait 34% of the window (data-bound) -> device busy 73% of the
    # window, the rest dispatch (mixed: the device still idles a quarter of each step)
    findings = {r.id: r.status for r in d.findings}
    assert findings["data-bound"] == "disappeared" and findings["mixed"] == "appeared"
    # ~40% of each workers=0 step waits in the single-process loader's __next__
    assert findings["dataloader-bound"] == "disappeared"
    assert "resolved: dataloader-bound" in d.conclusion
    assert "The verdict moved from data-bound to mixed" in d.conclusion


def test_cross_vendor_pair_says_kernels_cannot_match():
    d = _diff(corpus(QWEN_H100), corpus(QWEN_MI300))
    assert (d.a.vendors, d.b.vendors) == (["NVIDIA"], ["AMD"])
    assert not d.kernels.comparable and not d.kernels.rows
    assert "cannot be matched by name" in d.kernels.reason
    assert 0 < len(d.kernels.top_a) <= 5 and 0 < len(d.kernels.top_b) <= 5
    assert "cannot be matched by name" in d.conclusion
    # runtime calls meet across vendors instead of all appearing and vanishing
    launch = next(r for r in d.ops if r.name == "cudaLaunchKernel | hipLaunchKernel")
    assert launch.calls_a > 500 and launch.calls_b > 500
    # instead: device time by kind of work; one step each, 240 vs 243 GEMMs
    gemm = next(r for r in d.kernels.by_kind if r.key == "gemm")
    assert (gemm.calls_a, gemm.calls_b) == (240, 243)
    assert gemm.us_b > gemm.us_a  # 16.9 ms of hipBLASLt GEMMs vs 12.6 ms of cuBLAS ones
    assert "by kind of work: " in d.conclusion
    # the device change comes first
    assert d.conclusion.startswith("The device changed (another vendor's GPU)")
    kernels = next(s for s in sections(d) if s.title.startswith("Kernels"))
    assert "cannot be matched by name" in kernels.text[0]
    kinds = {r.key for r in d.kernels.by_kind}
    assert len(kernels.rows) == len(kinds) + 10  # no per-kernel listing beyond the top 5 each


@pytest.mark.parametrize("fmt", sorted(RENDERERS))
def test_every_format_renders(fmt):
    d = _diff(corpus("gpu/compare_base.json.gz"), corpus("gpu/compare_test.json.gz"))
    out = RENDERERS[fmt](d)
    # Markdown shows names literally: `_` escaped (report.tables.md_cell)
    assert ("All2All\\_Pooled\\_Req" if fmt == "md" else "All2All_Pooled_Req") in out
    if fmt == "json":
        data = json.loads(out)
        assert data["steps"][1]["b"]["step"] == 1010
        assert {r["name"] for r in data["ops"] if r["status"] == "appeared"} >= {
            "All2All_Pooled_Req"
        }
    if fmt == "html":
        # the shared report page: its stylesheet, nothing fetched from elsewhere
        assert out.lstrip().startswith("<!DOCTYPE html>") and '<div class="ks">' in out
        assert " src=" not in out and " href=" not in out and "url(" not in out
    if fmt == "md":
        assert "| appeared | All2All\\_Pooled\\_Req |" in out


def test_html_draws_each_runs_timeline_with_its_own_findings():
    """With the runs, the page holds two timelines (A then B) and each run's finding cards,
    tied by key: B's card number i is B's finding i, whose evidence the B payload locates."""
    from kinetoscope.pipeline.timeline_sides import diff_sides
    from kinetoscope.report.diff_render import to_html

    runs = (
        load_run(corpus("gpu/compare_base.json.gz")),
        load_run(corpus("gpu/compare_test.json.gz")),
    )
    diff = diff_runs(*runs)
    page = to_html(diff, diff_sides(diff, runs))
    payloads = re.findall(r'<script type="application/json">(.*?)</script>', page)
    assert len(payloads) == 2
    assert page.index('data-timeline="a"') < page.index('data-timeline="b"')
    assert page.index("<h2>Runs (A -&gt; B)</h2>") < page.index('data-timeline="a"')
    for key, run, payload in zip("ab", runs, payloads, strict=True):
        data = json.loads(payload)
        assert len(data["findings"]) == len(run.findings)
        assert [s[0] for s in data["steps"]] == [s[0] for s in run.steps]
        cards = re.findall(rf'data-finding="(\d+)" data-for="{key}"', page)
        assert sorted(map(int, cards)) == list(range(len(run.findings)))
    # both traces hold ProfilerStep#1009 and #1010 (test_compare_base_vs_test)
    assert [s[0] for s in json.loads(payloads[0])["steps"]] == ["#1009", "#1010"]
    # tables.js, timeline.js and timeline_input.js, once for both timelines
    assert page.count("<script>") == 3
    assert " src=" not in page and " href=" not in page and "url(" not in page


def test_cli_diff_formats_and_errors(tmp_path):
    """In this process (`run_here`): what diff writes and exits with is the point; its
    console path (`python -m kinetoscope diff` on bad input) is a child in
    tests/commands/test_hard_input.py."""
    a, b = corpus("gpu/compare_base.json.gz"), corpus("gpu/compare_test.json.gz")
    out = tmp_path / "d.html"
    res = run_here("diff", a, b, "--format", "html", "-o", out)
    assert res.returncode == 0, res.stderr
    assert "All2All_Pooled_Req" in out.read_text()
    res = run_here("diff", a, tmp_path / "missing.json")
    assert res.returncode == 2 and "missing.json" in res.stderr
    assert "Traceback" not in res.stderr
    res = run_here("diff", a, b, "--format", "xml")
    assert res.returncode == 2 and "unknown format 'xml'" in res.stderr


# ---- CPU eager vs compiled, profiled here ----------------------------------
@pytest.fixture(scope="module")
def eager_and_compiled(tmp_path_factory):
    pytest.importorskip("torch")
    if not (shutil.which("g++") or shutil.which("cc")):
        pytest.skip("torch.compile on CPU needs a C++ compiler (g++ or cc)")
    out = tmp_path_factory.mktemp("compile")
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    traces = []
    for mode in ([], ["--compile"]):
        args = ["profile", "matmul_add", "--device", "cpu", "--warmup", "3", "--out", out, *mode]
        res = subprocess.run(
            [sys.executable, "-m", "kinetoscope", *map(str, args)],
            capture_output=True,
            text=True,
            env=env,
        )
        assert res.returncode == 0, res.stderr[-2000:]
        traces.append(re.search(r"^trace: (.+)$", res.stdout, re.M)[1])
    return (*traces, res.stderr)  # and what the compiled run said while it worked


def test_profile_says_it_is_compiling(eager_and_compiled):
    # the first warm-up call builds the compiled graph (12 s here once), said as its stage
    stages = [s for s in eager_and_compiled[2].splitlines() if ": still running, " not in s]
    said = [line.removeprefix("[kinetoscope] ").split(":")[0] for line in stages]
    assert said[said.index("warming up") + 1 : said.index("profiling")] == ["compiling"]
    assert "compiling: torch.compile (default) on the first call" in stages[said.index("compiling")]


def test_cpu_eager_vs_compiled(eager_and_compiled):
    d = _diff(*eager_and_compiled[:2])
    assert d.a.steps == d.b.steps == 3
    assert not d.kernels.rows  # host-only traces
    # eager: matmul -> mm, then add; compiled: the wrapper stack calls addmm
    assert {"aten::mm", "aten::add"} <= _ops(d, "vanished")
    appeared = _ops(d, "appeared")
    assert "aten::addmm" in appeared and "TorchDynamo Cache Lookup" in appeared
    assert any(n.startswith("Torch-Compiled Region") for n in appeared)
    # the rules see the compiled region appear
    # the environment row names the change the user made on purpose
    env = {r.field: (r.a, r.b) for r in d.environment.differences}
    # (recorded as null when off: said as "off", never "None")
    assert env["kinetoscope compile"] == ("off", "default")
    assert d.conclusion.startswith("The environment differs: kinetoscope compile off -> default")
    assert "None" not in d.conclusion
    # Inductor's compiled graph is named after a hash of its code: shown without it
    assert "Call CompiledFxGraph" in _ops(d, "appeared")
    assert not re.search(r"[a-z0-9]{20,}|##", d.conclusion), d.conclusion
    findings = {r.id: r.status for r in d.findings}
    assert findings["compiled-region"] == "appeared"
    # CPU runs are judged on their compute share: a regime finding, never host-only
    assert "host-only" not in findings
    if "not-judged" in findings:
        # a loaded machine can leave a stretch of a short recording with nothing recorded
        # (the thread off the CPU): that capture is rightly not judged, and says why
        graded = [kinetoscope.explain(t).quality for t in eager_and_compiled[:2]]
        assert any("dead-window" in {i["id"] for i in q["issues"]} for q in graded), graded
    else:
        assert {"overhead-bound", "mixed", "compute-bound"} & findings.keys()
    assert "Neither trace recorded device kernels" in d.conclusion
    # the op sentence names the three largest ops (by self CPU/step) that vanished and
    # appeared: which three appeared depends on the machine's load (Dynamo's own ops,
    # ~10-30 us each, against addmm's ~16 us), so they are read from the diff's rows
    for status in ("vanished", "appeared"):
        rows = sorted(
            (r for r in d.ops if r.status == status), key=lambda r: -max(r.self_us_a, r.self_us_b)
        )
        assert all(r.name in d.conclusion for r in rows[:3]), (status, d.conclusion)
    assert "aten::mm" in d.conclusion  # eager's BLAS call: by far the largest that vanished
    assert "compiled-region" in d.conclusion


# ---- kernel matching on tiny traces ----------------------------------------
def _gpu_run(tmp_path, name, kernels, launch_name="cudaLaunchKernel"):
    """Two ProfilerSteps, each launching `kernels` (name, duration) from one aten op."""
    events = []
    corr = 0
    for step in range(2):
        t0 = step * 1000
        events.append(op(f"ProfilerStep#{step}", t0, 900, cat="user_annotation"))
        events.append(op("aten::mm", t0 + 10, 500))
        for k, (kname, dur) in enumerate(kernels):
            corr += 1
            events.append(launch(t0 + 20 + 50 * k, 10, corr, name=launch_name))
            events.append(kernel(kname, t0 + 100 + 100 * k, dur, corr))
    return write_trace(tmp_path / name, events)


def test_kernel_variants_pair_and_triton_index_is_ignored(tmp_path):
    a = _gpu_run(
        tmp_path,
        "a.json",
        [("ampere_sgemm_128x64_nn", 40), ("triton_poi_fused_add_mul_0", 5), ("elementwise_x", 3)],
    )
    b = _gpu_run(
        tmp_path,
        "b.json",
        [
            ("ampere_bf16_s16816gemm_bf16_128x64_ldg8_f2f_stages_64x3_tn", 20),
            ("triton_poi_fused_add_mul_3", 5),
            ("elementwise_y", 3),
        ],
    )
    d = _diff(a, b)
    rows = {r.status: r for r in d.kernels.rows if r.status != "unchanged"}
    unchanged = d.kernels.by_status("unchanged")
    # Inductor renumbered the Triton kernel: the same fused code, unchanged
    assert [r.key for r in unchanged] == ["Triton:triton_poi_fused_add_mul"]
    # the GEMM moved to another cuBLAS variant: one decision, named field by field
    gemm = rows["replaced"]
    assert gemm.display.startswith("ampere_sgemm_128x64_nn")
    assert "dtype f32 -> bf16" in gemm.change and "layout nn -> tn" in gemm.change
    assert "tile" not in gemm.change  # both 128x64
    assert (gemm.us_a, gemm.us_b) == (40, 20)
    # unrelated kernels of different families stay gone and new
    assert rows["gone"].key == "elementwise_x" and rows["new"].key == "elementwise_y"
    assert "1 replaced by another variant" in d.conclusion


def test_vendor_from_launch_calls_when_devices_are_not_recorded(tmp_path):
    a = _gpu_run(tmp_path, "a.json", [("ampere_sgemm_128x64_nn", 40)])
    b = _gpu_run(tmp_path, "b.json", [("Cijk_Alik_Bljk_SB_MT64x64x16", 40)], "hipLaunchKernel")
    d = _diff(a, b)
    assert (d.a.vendors, d.b.vendors) == (["NVIDIA"], ["AMD"])
    assert not d.kernels.comparable and "cannot be matched by name" in d.conclusion
    # and the launch calls meet under one name
    assert "cudaLaunchKernel | hipLaunchKernel" in _ops(d, "unchanged")


def test_a_trace_against_itself_is_all_unchanged():
    path = corpus("gpu/tiny_transformer_block_h100.pt.trace.json.gz")
    d = _diff(path, path)
    assert {r.status for r in d.kernels.rows} == {"unchanged"}
    assert {r.status for r in d.ops} == {"unchanged"}
    assert {r.status for r in d.findings} == {"unchanged"}
    # 3 steps of 16 kernels: the same 16 launches per step on both sides
    assert all(p.a.kernels == p.b.kernels == 16 for p in d.steps)
    assert d.conclusion.startswith("No difference in the recorded environment")
    assert "B takes about as long as A per step" in d.conclusion
    assert "Nothing changed: every part of the step is equal" in d.conclusion
    assert "The device does the same work" in d.conclusion
    assert "The host runs the same ops." in d.conclusion
