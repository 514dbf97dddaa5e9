"""Renderers say each fact once: values, event names, steps, and not-checked reasons."""

from __future__ import annotations

import json

import kinetoscope
from kinetoscope.report.evidence import evidence_line, short_name
from kinetoscope.report.markdown import render_markdown
from kinetoscope.report.text import render_text
from kinetoscope.rules.base import Evidence

from ..conftest import corpus

CPU = "cpu/cpu_only_rank34.pt.trace.json.gz"
LAYER_NORM = (
    "void at::native::(anonymous namespace)::vectorized_layer_norm_kernel<c10::BFloat16, float>"
    "(int, float, c10::BFloat16 const*, c10::BFloat16 const*, float*)"
)


def test_a_time_stated_in_the_text_is_not_repeated_but_stays_in_json():
    stated = Evidence("aten::mm took 84.0 us CPU", value=84.0, unit="us")
    assert evidence_line(stated).text == "aten::mm took 84.0 us CPU"
    assert stated.to_dict()["value"] == 84.0
    bare = Evidence("host time in the active window", value=2114.0, unit="us")
    assert evidence_line(bare).text == "host time in the active window: 2.11 ms"
    # digits that are not a time do not hide the value
    counted = Evidence("top 3 kernels", value=1500.0, unit="us")
    assert evidence_line(counted).text == "top 3 kernels: 1.50 ms"


def test_the_event_name_is_not_printed_again_when_the_text_mentions_it():
    line = evidence_line(Evidence("aten::item in aten::is_nonzero: 1x", name="aten::item"))
    assert line.name == "" and line.text == "aten::item in aten::is_nonzero: 1x"
    other = evidence_line(Evidence("self CPU 2.1 ms", name="gloo:all_reduce"))
    assert other.name == "gloo:all_reduce"


def test_the_step_is_said_once():
    e = Evidence("step #6: 155 calls", name="ProfilerStep#6", ts_us=471.6, dur_us=4426.0, step=6)
    line = evidence_line(e)
    assert line.text == "155 calls" and "step #6" not in line.where
    assert line.where == "at +472 us, for 4.43 ms"


def test_kernel_signatures_read_as_their_short_name():
    assert short_name(LAYER_NORM) == "vectorized_layer_norm_kernel"
    assert short_name("Memcpy DtoH (Device -> Pinned)") == "Memcpy DtoH (Device -> Pinned)"
    assert short_name("aten::mm") == "aten::mm"
    nccl = "ncclDevKernel_Generic(ncclDevKernelArgsStorage<4096ul>)"  # mi300 resnet trace
    assert short_name(nccl) == "ncclDevKernel_Generic"


def test_not_checked_rules_with_one_reason_share_a_line_in_text_but_not_in_json():
    report = kinetoscope.explain(corpus(CPU))
    groups = report.skipped_groups()
    no_device = next(ids for ids, reason, _ in groups if reason.startswith("no device activity"))
    assert len(no_device) >= 3
    text = render_text(report, width=1000)  # one line per group, unwrapped
    assert ", ".join(no_device) + ":" in text
    skipped = text[text.index("Not checked") :]
    assert skipped.count("no device activity recorded") == 1
    md = render_markdown(report)
    assert ", ".join(f"`{i}`" for i in no_device) in md
    listed = [s["id"] for s in json.loads(report.to_json())["not_checked"]]
    assert set(no_device) <= set(listed) and len(listed) == len(set(listed))


def test_a_host_only_report_prints_no_device_numbers_and_one_window():
    report = kinetoscope.explain(corpus(CPU))
    text = render_text(report)
    steps = text[text.index("Steps") : text.index("Findings")]
    assert "0 us" not in steps and "device busy 0.0%" not in steps
    assert "window 210 ms (1 step)" in text
    # every total in the findings is the active window's (one 210 ms step), not the
    # whole 1.3 s recording: gloo:all_reduce's 343.681 ms self CPU summed over 2 threads
    findings = text[text.index("Findings") : text.index("Not checked")]
    assert "344 ms in the active window, summed over 2 threads" in findings
    assert "344 ms of 554 ms in the active window" in findings
    # the whole-trace total the table reported before
    assert "2.13 s" not in text and "2.14 s" not in text
    assert "| #551 |" in render_markdown(report) and "1 step," in render_markdown(report)


def test_long_kernel_names_read_as_their_decoded_short_name():
    # hipBLASLt names run past 90 characters (xdit flux trace); rules write the short form
    name = (
        "Cijk_Alik_Bljk_BBS_BH_Bias_HA_S_SAV_UserArgs_MT128x192x64_MI16x16x1_SN_LDSB1_AFC1_AG0_"
        "AFEM1_AFEM1_ASEM1_CLR1_CADS0_DTVA0_DTVB0_EPS0_FDSI0_GRPM1_GRVWA8_GRVWB8_GSUAMB_GLS0"
    )
    assert short_name(name) == "Cijk_Alik_Bljk_BBS_MT128x192x64"
    line = evidence_line(Evidence("Cijk_Alik_Bljk_BBS_MT128x192x64: hipBLASLt, gemm", name=name))
    assert line.name == "" and line.text.startswith("Cijk_Alik_Bljk_BBS_MT128x192x64: hipBLASLt")
