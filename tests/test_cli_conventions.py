"""CLI conventions a user can rely on: `--version`, `-h` on every command, upper-case
argument names, no type label on a flag, and every command in the README's table."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

import kinetoscope
from kinetoscope.cli import COMMANDS, app

README = (Path(__file__).resolve().parents[1] / "README.md").read_text(encoding="utf-8")


def _help(*args: str) -> str:
    done = CliRunner().invoke(app, [*args, "-h"], env={"COLUMNS": "200"}, prog_name="kinetoscope")
    assert done.exit_code == 0, done.output
    return done.output


def test_version():
    done = subprocess.run(
        [sys.executable, "-m", "kinetoscope", "--version"], capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == f"kinetoscope {kinetoscope.__version__}"


@pytest.mark.parametrize("command", COMMANDS)
def test_short_help_on_every_command(command):
    text = _help(command)
    assert f"Usage: kinetoscope {command}" in text
    assert "<bool>" not in text  # a flag takes no value: no type label
    usage = re.search(rf"Usage: kinetoscope {command} \[OPTIONS\] (.*)", text)[1]
    for name in re.findall(r"[{\[]+([^\]{}]+)[}\]]+", usage):
        name = name.removeprefix("-- ").removesuffix("...")
        assert name == name.upper() or name.endswith(".py"), (command, name)


def test_root_help_has_short_flag_and_no_bool_labels():
    text = _help()
    assert "--version" in text and "-h" in text and "<bool>" not in text


@pytest.mark.parametrize("command", COMMANDS)
def test_every_command_is_in_the_readme_table(command):
    assert re.search(rf"^\| `kinetoscope {command}\b", README, re.M), command
