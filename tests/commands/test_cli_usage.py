"""CLI usage errors and declared dependencies, as on an install made exactly as the README says.

typer (>= 0.26) vendors click, so a README install has no `click` package: the
usage-error path must not need it. The subprocesses below block `import click`
to run as such an install does even where click happens to be installed.
"""

from __future__ import annotations

import ast
import re
import sys
from pathlib import Path

import pytest

from ..capture_helpers import run_cli

REPO = Path(__file__).resolve().parents[2]
NO_CLICK_MAIN = (
    "import sys; sys.modules['click'] = None\n"
    "sys.argv = ['kinetoscope', *sys.argv[1:]]\n"
    "from kinetoscope.cli import main; main()\n"
)


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (["expalin", "t.json"], "No such command 'expalin'"),
        (["explain", "--bogus", "t.json"], "No such option: --bogus"),
        (["summary"], "Missing argument 'TRACE'"),
        ([], "Usage: kinetoscope"),
    ],
)
def test_usage_errors_exit_2_with_a_usage_line_and_no_traceback(tmp_path, args, expected):
    done = run_cli(*args, code=NO_CLICK_MAIN, cwd=tmp_path)
    assert done.returncode == 2, done.stderr
    assert "Traceback" not in done.stderr + done.stdout
    # bare `kinetoscope` shows the whole help (on stdout); errors go to stderr
    shown = done.stderr if args else done.stdout
    assert re.search(r"^\s*Usage: kinetoscope", shown, re.M), shown
    assert expected in shown


def _imported_top_level_packages() -> set[str]:
    """Every absolute import in src/, including the lazy ones inside functions."""
    found: set[str] = set()
    for path in (REPO / "src" / "kinetoscope").rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                found.update(alias.name.split(".")[0] for alias in node.names)
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                found.add(node.module.split(".")[0])
    return found - set(sys.stdlib_module_names) - {"kinetoscope", "__future__"}


def _declared_distributions() -> set[str]:
    text = (REPO / "pyproject.toml").read_text(encoding="utf-8")
    try:
        import tomllib
    except ModuleNotFoundError:  # Python 3.10
        import tomli as tomllib
    project = tomllib.loads(text)["project"]
    specs = list(project["dependencies"])
    for extra in project["optional-dependencies"].values():
        specs.extend(extra)
    return {re.match(r"[A-Za-z0-9_.-]+", s)[0].lower().replace("_", "-") for s in specs}


#: import names whose distribution is named otherwise
DISTRIBUTION_OF = {"re2": "google-re2"}


def test_every_imported_package_is_declared():
    imported = _imported_top_level_packages()
    assert {"typer", "numpy", "msgspec"} <= imported  # the walk sees real imports
    declared = _declared_distributions()
    # an import name spells with "_" what its distribution's name spells with "-"
    missing = sorted(
        n for n in imported if DISTRIBUTION_OF.get(n, n.lower().replace("_", "-")) not in declared
    )
    assert not missing, f"imported but not declared in pyproject.toml: {missing}"
