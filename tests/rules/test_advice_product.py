"""Advice names only what exists and fits the trace (issue 10, class 8): every kinetoscope
command and option a rule mentions is in the CLI, and host-only traces get no device advice."""

from __future__ import annotations

import re
from pathlib import Path

import typer

from kinetoscope.cli import app
from kinetoscope.rules.engine import run_rules
from kinetoscope.trace import load

from ..conftest import corpus
from ..torch_traces import torch_traces  # noqa: F401 - fixture

RULES_DIR = Path(__file__).resolve().parents[2] / "src" / "kinetoscope" / "rules"
#: "kinetoscope" used as a word in prose, not as a command
PROSE = {"or", "recorded"}
#: options of other tools that advice may name
FOREIGN_OPTIONS = {"--setperfdeterminism"}  # rocm-smi
DEVICE_WORDS = re.compile(r"CUDA graph|launch latency|occupancy|reduce-overhead", re.IGNORECASE)


def _commands() -> dict[str, set[str]]:
    group = typer.main.get_command(app)
    out = {}
    for name, command in group.commands.items():
        out[name] = {opt for p in command.params for opt in (*p.opts, *p.secondary_opts)}
    return out


def _rule_texts() -> list[str]:
    return [p.read_text() for p in sorted(RULES_DIR.glob("*.py"))]


def test_every_named_command_and_option_exists():
    commands = _commands()
    named = []
    for text in _rule_texts():
        flat = re.sub(r'"\s*\n\s*"', "", text)  # join implicitly concatenated string literals
        for m in re.finditer(r"kinetoscope ([a-z]+)((?: [A-Z]+| --[a-z-]+)*)", flat):
            command, rest = m.group(1), m.group(2)
            if command in PROSE:
                continue
            named.append(command)
            assert command in commands, f"advice names `kinetoscope {command}`: no such command"
            for option in re.findall(r"--[a-z-]+", rest):
                assert option in commands[command], f"`kinetoscope {command} {option}` unknown"
        for option in re.findall(r"(?<![\w-])--[a-z][a-z-]+", flat):
            known = any(option in opts for opts in commands.values())
            assert known or option in FOREIGN_OPTIONS, f"advice names unknown option {option}"
    assert {"chain", "diff", "memory", "profile"} <= set(named)


def test_no_device_advice_on_host_only_traces(torch_traces):  # noqa: F811
    for trace in (load(corpus("cpu/cpu_only_rank34.pt.trace.json.gz")), load(torch_traces["cold"])):
        assert not trace.has_device
        for f in run_rules(trace).findings:
            text = " ".join([f.title, f.explanation, f.suggestion, *(e.text for e in f.evidence)])
            assert not DEVICE_WORDS.search(text), f"{f.id} gives device advice: {text[:200]}"
