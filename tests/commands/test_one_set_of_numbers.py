"""Every command shows the same figures for a trace: they all read `analysis.stats`.

`summary --format json`, `explain --format json`, `diff A A --format json`,
`table --window --format json`, `check` and the HTML report run on a corpus trace of
each family (tests/corpus_families.py; every corpus trace under `pytest -m corpus`);
the shared figures must be equal, and timestamps relative to the trace start with the
origin given once. Shares are of one stated base (the window's
self CPU / self device totals for op and kernel rows, the window for the
host-time parts) and print with the same digits in text, Markdown and HTML.
A CPU run recorded by `kinetoscope profile` checks the printed digits of one
op share, the versions and the run settings in every format.
"""

from __future__ import annotations

import html as html_text
import json
import re

import pytest
from typer.testing import CliRunner

from kinetoscope.cli import app
from kinetoscope.compare.check import run_check
from kinetoscope.formatting.units import fmt_pct, fmt_us

from ..capture_helpers import profile_here
from ..conftest import CORPUS, corpus, corpus_files
from ..corpus_families import by_family
from ..precision_traces import precision_traces  # noqa: F401 - fixture

EVERY_TRACE = [str(p.relative_to(CORPUS)) for p in corpus_files()]


def _assert_same(a, b, where: str) -> None:
    """Equal structure and values; numbers equal up to the reports' rounding (4 decimals)."""
    if isinstance(a, dict):
        assert isinstance(b, dict) and a.keys() == b.keys(), where
        for key in a:
            _assert_same(a[key], b[key], f"{where}.{key}")
    elif isinstance(a, list):
        assert isinstance(b, list) and len(a) == len(b), where
        for i, (x, y) in enumerate(zip(a, b, strict=True)):
            _assert_same(x, y, f"{where}[{i}]")
    elif isinstance(a, float | int) and not isinstance(a, bool):
        assert b == pytest.approx(a, rel=1e-6, abs=1e-4), where
    else:
        assert a == b, where


def _json(*args: str) -> dict:
    result = CliRunner().invoke(app, list(args))
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


@pytest.mark.parametrize("relative", by_family(EVERY_TRACE))
def test_commands_agree(relative, tmp_path):
    path = str(corpus(relative))
    explain = _json("explain", path, "--format", "json")
    summary = _json("summary", path, "--format", "json")
    diff = _json("diff", path, path, "--format", "json")
    m = explain["metrics"]
    # summary: the same metrics, steps relative to the same origin
    assert summary["origin_us"] == pytest.approx(explain["trace"]["origin_us"])
    assert summary["metrics"].keys() == m.keys()
    for key, value in m.items():
        assert summary["metrics"][key] == pytest.approx(value, abs=1e-4), key
    _assert_same(summary["statistics"], explain["statistics"], "statistics")
    _assert_same(summary["quality"], explain["quality"], "quality")
    assert len(summary["steps"]) == len(explain["steps"])
    for s, e in zip(summary["steps"], explain["steps"], strict=True):
        assert s["start_us"] == pytest.approx(e["start_us"], abs=1e-3)
        assert s["start_us"] >= 0
        assert s["device_busy_us"] == pytest.approx(e["device_busy_us"], abs=1e-3)
        assert s["data_wait_us"] == pytest.approx(e["data_wait_us"], abs=1e-3)
    # diff A A: each side carries the explain figures
    for side in (diff["a"], diff["b"]):
        assert side["step_time_us"] == pytest.approx(m["step_time_us"], abs=1e-3)
        assert side["device_busy_ratio"] == pytest.approx(m["device_busy_ratio"], abs=1e-4)
        assert side["kernels_per_step"] == pytest.approx(m["kernels_per_step"])
        assert side["host_time_us"] == pytest.approx(m["host_time_per_step_us"], abs=1e-3)
    # check: the expressions measure the same numbers
    ratio = round(m["device_busy_ratio"], 4)
    outcomes = run_check(
        path,
        [
            f"kernels_per_step == {m['kernels_per_step']}",
            f"outlier_steps == {m['outlier_steps']}",
            f"regime == {explain['verdict']['regime']}",
            f"device_busy_ratio >= {ratio - 1e-3}",
            f"device_busy_ratio <= {ratio + 1e-3}",
            "dispatch_share >= 0",
        ],
    )
    # a device figure where no device activity was recorded is not measured: NOT CHECKED
    blind = "gpu-idle-breakdown" in {s["id"] for s in explain["not_checked"]}
    for o in outcomes:
        assert o.passed or blind and not o.checked and "no device activity" in o.measured, o
    # check prints a share as the verdict line does, beside the number it compared
    # (where the line shows dispatch: the window account's classes of at least 0.05%)
    printed = re.search(r"dispatch \+ launch (\d+\.\d%)", explain["verdict"]["summary"])
    if (
        printed
        or m["dispatch_share"] >= 0.0005
        and explain["verdict"]["regime"]
        not in ("not-judged", "cold-window", "compile-window", "host-only")
    ):
        assert outcomes[-1].measured.endswith(f"({printed.group(1)})"), outcomes[-1].measured
    # the outlier count: step rows flagged == metrics == step-outlier's title
    flagged = sum(1 for s in explain["steps"] if s["outlier"])
    assert flagged == m["outlier_steps"]
    for f in explain["findings"]:
        if f["id"] == "step-outlier":
            assert f["title"].startswith(f"{flagged} of ")
    _html_shows_the_same_figures(path, explain, tmp_path / "r.html")
    _one_base_for_row_shares(path, explain, summary)
    # versions and kinetoscope's run settings: one source for summary and explain
    assert summary["versions"] == explain["trace"]["versions"]
    assert summary["run"] == explain["trace"]["run"]


def _one_base_for_row_shares(path: str, explain: dict, summary: dict) -> None:
    """summary's top rows are `table --window`'s rows, as shares of its closing totals,
    and explain's hotspot names the same share (summary once divided op self time by the
    ops' own total: aten::mm 63.3% "of ops" beside 62.8% in table and explain)."""
    table = _json("table", path, "--window", "--format", "json", "--row-limit", "-1")
    assert table["scope"] == "active window"
    rows = {(r["name"], r["is_device"]): r for r in table["rows"]}
    for key, device, total in (
        ("top_host_ops", False, table["self_cpu_total_us"]),
        ("top_kernels", True, table["self_device_total_us"]),
    ):
        for ranked in summary[key]:
            row = rows[(ranked["name"], device)]
            own = row["self_device_us"] if device else row["self_cpu_us"]
            assert ranked["total_us"] == pytest.approx(own, abs=1e-3), ranked["name"]
            assert ranked["share"] == pytest.approx(own / total, abs=1e-6), ranked["name"]
    for f in explain["findings"]:
        if f["id"] == "hotspot":
            side = "top_kernels" if f["title"].endswith("device time (threshold 50%)") else None
            top = summary[side or "top_host_ops"][0]
            assert (f["measured"]["name"], f["measured"]["share"]) == (
                top["name"],
                pytest.approx(top["share"], abs=1e-4),  # the report rounds to 4 decimals
            )
            assert f"owns {fmt_pct(top['share'])} of self" in f["title"]


def _html_shows_the_same_figures(path: str, explain: dict, out) -> None:
    """The HTML report prints the explain JSON's step figures, verdict and trust grade."""
    pytest.importorskip("jinja2")
    result = CliRunner().invoke(app, ["explain", path, "--format", "html", "-o", str(out)])
    assert result.exit_code == 0, result.output
    html = out.read_text()
    assert explain["verdict"]["regime"] in html
    assert explain["quality"]["grade"] in html
    for row in explain["steps"]:
        assert fmt_us(row["device_busy_us"]) in html
        assert fmt_us(row["dur_us"]) in html
    _verdict_bar_is_one_statistic(html, explain)


def _verdict_bar_is_one_statistic(html: str, explain: dict) -> None:
    """Each class of the window account shows its share of the window with the digits text
    prints, and beside it that class's total over the step count, so the larger share has
    the larger time per step (a per-step median beside a window share broke that)."""
    bar = html.split('data-section="verdict"', 1)[1].split("</ul>", 1)[0]
    steps = explain["trace"]["window"]["steps"]
    account, held = explain["verdict"]["account"], explain["verdict"]["account_us"]
    assert sum(account.values()) == pytest.approx(1.0, abs=1e-3)
    for cls, share in account.items():
        if share <= 0:
            continue
        # the JSON rounds to 4 decimals: the page prints the unrounded share's digits
        shown = {fmt_pct(share + d) for d in (-5e-5, 0.0, 5e-5)}
        printed = next(
            (f"<strong>{p}</strong>" for p in shown if f"<strong>{p}</strong>" in bar), None
        )
        assert printed is not None, (cls, shown)
        if steps:
            per_step = fmt_us(held[cls] / steps)
            assert f'{printed} <span class="where">({per_step}/step, mean' in bar, cls


@pytest.fixture(scope="module")
def cpu_matmul(tmp_path_factory):
    """A 512x512 fp32 matmul + add on the CPU, recorded by `kinetoscope profile` after 2
    warm-up iterations: aten::mm does 512 times the arithmetic of aten::add, so it owns
    most of the self CPU time (the hotspot fires) unless the machine is starved; the
    trace carries kinetoscope's versions and run settings."""
    pytest.importorskip("torch")
    out = tmp_path_factory.mktemp("cpu_matmul")
    done = profile_here(
        "matmul_add", "--device", "cpu", "--size", "512", "--dtype", "fp32",
        "--warmup", "2", "--out", str(out),
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    return next(out.rglob("*.json"))


def _text(*args: str) -> str:
    result = CliRunner().invoke(app, list(args), terminal_width=400)
    assert result.exit_code == 0, result.output
    return result.stdout


def test_one_op_share_prints_the_same_digits_everywhere(cpu_matmul, tmp_path):
    """The top op's share of self CPU time: summary (text, JSON), `table --window`, explain
    (text, Markdown, JSON, HTML op table and hotspot) print the same digits. The top op is
    aten::mm's BLAS call on a quiet machine; a starved one (CI under load) can let
    aten::add's self time win, so the op is read from the trace, not assumed."""
    path = str(cpu_matmul)
    summary = _json("summary", path, "--format", "json")
    explain = _json("explain", path, "--format", "json")
    top = summary["top_host_ops"][0]
    name, shown = top["name"], fmt_pct(top["share"])
    assert re.search(rf"{re.escape(name)}\s.*\s{re.escape(shown)}", _text("summary", path))
    table = _text("table", path, "--window")
    percent = re.search(rf"{re.escape(name)}\s+(\d+\.\d\d)%", table).group(1)
    # The table prints two decimals and the JSON share four: each is off the unrounded
    # figure by at most half its last digit, so they agree to 0.01 points. (Rounding the
    # table's 61.75 again to one decimal gives 61.8 where the figure is 61.746: no test.)
    assert abs(float(percent) - 100 * top["share"]) <= 0.01 + 1e-9
    out = tmp_path / "r.html"
    _text("explain", path, "--format", "html", "-o", str(out))
    ops = out.read_text().split("<h2>Host ops", 1)[1].split("</table>", 1)[0]
    row = re.search(rf'title="{re.escape(name)}">.*?</tr>', ops).group(0)
    assert row.endswith(f">{shown}</td></tr>")
    hotspots = [f for f in explain["findings"] if f["id"] == "hotspot"]
    assert bool(hotspots) == (top["share"] >= 0.5)  # the rule's min_share
    if hotspots:
        said = f"{name} owns {shown} of self CPU time"
        assert said in hotspots[0]["title"]
        assert said in _text("explain", path)
        assert said in _text("explain", path, "--format", "md")


def test_versions_and_run_settings_show_in_every_format(cpu_matmul, tmp_path):
    """The torch version summary printed and explain called "not recorded" (JSON
    `"versions": {}`), and kinetoscope's own settings (workload, size, warm-up count,
    compile mode, schedule) were nowhere in explain."""
    path = str(cpu_matmul)
    torch = pytest.importorskip("torch")
    explain = _json("explain", path, "--format", "json")
    versions, run = explain["trace"]["versions"], explain["trace"]["run"]
    assert versions["torch_version"] == torch.__version__
    assert run["workload"] == "matmul_add" and run["params"]["size"] == 512
    assert run["warmup_iters"] == 2 and run["compile"] is None
    assert run["schedule"] == {"wait": 1, "warmup": 1, "active": 3, "repeat": 1}
    assert _json("summary", path, "--format", "json")["versions"] == versions
    out = tmp_path / "r.html"
    _text("explain", path, "--format", "html", "-o", str(out))
    outputs = {
        "summary": _text("summary", path),
        "text": _text("explain", path),
        "md": _text("explain", path, "--format", "md").replace("\\_", "_"),
        "html": html_text.unescape(out.read_text()),
    }
    for fmt, shown in outputs.items():
        shown = " ".join(shown.split())  # text wraps at 100 columns
        assert f"torch {torch.__version__}" in shown, fmt
        assert "not recorded" not in shown, fmt
        for phrase in (
            "workload matmul_add",
            "size 512",
            "fp32",
            "eager (no torch.compile)",
            "2 warm-up iterations before profiling",
            "schedule wait 1, warmup 1, active 3, repeat 1",
        ):
            assert phrase in shown, (fmt, phrase)


def _flat_text(*args: str) -> str:
    result = CliRunner().invoke(app, list(args))
    assert result.exit_code == 0, result.output
    return " ".join(result.stdout.split())  # the renderer wraps lines


def test_cpu_compute_share_is_one_number(precision_traces, tmp_path):  # noqa: F811
    """A CPU run's compute share: explain's text and JSON, its verdict's number, summary,
    check, the HTML report and a sweep row print the same figure."""
    import kinetoscope
    from kinetoscope.compare.sweep import crossover, measure
    from kinetoscope.compare.sweep_doc import sweep_document
    from kinetoscope.formatting.units import fmt_pct  # noqa: F811
    from kinetoscope.report.sweep_render import table_rows
    from kinetoscope.trace import load

    path = str(precision_traces["matmul_1024"])
    explain = _json("explain", path, "--format", "json")
    m = explain["metrics"]
    share = m["compute_share"]
    assert share >= 0.8 and explain["verdict"]["regime"] == "compute-bound"
    assert explain["verdict"]["ratio"] == pytest.approx(share)
    # the account's device on a CPU run is the same math: its share of the steady part
    assert explain["verdict"]["decomposition"]["device"] == pytest.approx(share, abs=1e-4)
    # the printed digits come from the unrounded figure: the JSON keeps 4 decimals, and a
    # ratio such as 0.9955 sits on the boundary of its one-decimal percent
    exact = kinetoscope.explain(path).metrics["compute_share"]
    assert exact == pytest.approx(share, abs=1e-4)
    text = _flat_text("explain", path)
    assert f"compute {fmt_pct(exact)}" in text and f"= {fmt_pct(exact)} of the" in text
    assert _json("summary", path, "--format", "json")["metrics"]["compute_share"] == (
        pytest.approx(share, abs=1e-4)
    )
    outcomes = run_check(
        path,
        [f"compute_share >= {share - 1e-4}", f"compute_share <= {share + 1e-4}"],
    )
    assert all(o.passed for o in outcomes), [o.line() for o in outcomes]
    point = measure(load(path), 1024.0)
    # the JSON rounds to 4 decimals; the sweep row holds the unrounded figure
    assert point.compute_share == pytest.approx(share, abs=1e-4)
    assert point.compute_us == pytest.approx(m["compute_us"], abs=1e-3)
    assert point.regime == "compute-bound"
    headers, rows = table_rows(sweep_document("size", [point], crossover([point])))
    assert rows[0][headers.index("compute %")] == fmt_pct(exact)
    assert rows[0][headers.index("compute/step")] == fmt_us(m["compute_us"], 1)
    pytest.importorskip("jinja2")
    out = tmp_path / "r.html"
    CliRunner().invoke(app, ["explain", path, "--format", "html", "-o", str(out)])
    html = out.read_text()
    assert '<span class="part device"' in html
    assert f'title="CPU compute {fmt_pct(exact)}"' in html


def test_sync_wait_from_blocking_copies_is_one_number(tmp_path):
    """dlrm rank 0: a 880 us cudaMemcpyAsync into pageable memory (under aten::to) and a
    1,078 us cudaStreamSynchronize in its one step: both are sync wait, in the text and
    JSON decomposition, the step row, host-sync's blocked time and check."""
    from kinetoscope.analysis.syncs import sync_sites
    from kinetoscope.trace import load

    path = str(corpus("multirank/dlrm_8ranks/worker0_step_12.1694128201545.pt.trace.json.gz"))
    trace = load(path)
    copies = [
        c
        for s in sync_sites(trace)
        for c in s.calls
        if trace.name(c) == "cudaMemcpyAsync" and trace.dur[c] == 880.0
    ]
    assert len(copies) == 1  # the pageable device-to-host copy is a wait
    explain = _json("explain", path, "--format", "json")
    m = explain["metrics"]
    [step] = explain["steps"]
    assert step["sync_wait_us"] == pytest.approx(m["sync_wait_us"])
    assert m["sync_wait_us"] >= 880.0 + 1078.0
    # the host blocked there mostly while the device worked: in the window account only
    # the part with every stream idle is the syncs' own (sync stall); the share metric,
    # the verdict's account, the text and host-sync's saving are that one figure
    stall = explain["verdict"]["account"]["sync_stall"]
    assert m["sync_share"] == pytest.approx(stall, abs=1e-4)
    assert stall * m["window_us"] < 0.2 * m["sync_wait_us"]
    assert f"sync stall {fmt_pct(stall)}" in _flat_text("explain", path)
    host_sync = next(f for f in explain["findings"] if f["id"] == "host-sync")
    assert host_sync["measured"]["blocked_us"] == pytest.approx(m["sync_wait_us"], abs=0.1)
    held = explain["verdict"]["account_us"]["sync_stall"]
    assert host_sync["measured"]["stall_us"] == pytest.approx(held, abs=0.1)
    share = round(m["sync_share"], 4)
    outcomes = run_check(path, [f"sync_share >= {share - 1e-3}", f"sync_share <= {share + 1e-3}"])
    assert all(o.passed for o in outcomes), [o.line() for o in outcomes]


def test_a_merged_finding_is_one_finding_in_every_format(tmp_path):
    # ResNet-50 without workers: dataloader-bound holds the verdict's data-bound (one wait)
    path = str(corpus("gpu/resnet50_dataloader_workers0.pt.trace.json.gz"))
    explain = _json("explain", path, "--format", "json")
    (wait,) = [f for f in explain["findings"] if {f["id"], *f["merged"]} & {"data-bound"}]
    assert wait["id"] == "dataloader-bound" and wait["merged"] == ["data-bound"]
    saving = f"~{fmt_us(wait['impact_us'])}"
    for fmt in ("text", "md", "html"):
        out = tmp_path / f"report.{fmt}"
        result = CliRunner().invoke(app, ["explain", path, "--format", fmt, "-o", str(out)])
        assert result.exit_code == 0, result.output
        text = out.read_text()
        assert "also data-bound" in text and saving in text, fmt
        assert text.count("dataloader-bound") >= 1
    # the folded finding fired: check sees it, at the survivor's severity
    (outcome,) = run_check(path, ["data-bound"], None, "10%")
    assert outcome.passed
