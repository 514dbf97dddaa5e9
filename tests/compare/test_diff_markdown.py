"""`diff --format md`: names from the traces are literal text in the Markdown, tables too.

The diff's Markdown writer was one of four hand-written table writers; it escaped `|`
in cells but nothing else, and left its prose as it came, so a kernel or op name
holding `<i>` (or `<script>`) reached a Markdown viewer as HTML. It now writes its
tables with `report.tables.markdown_table` and its prose through `md_cell`.
"""

from __future__ import annotations

import gzip
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from ..conftest import corpus

#: appended to every kernel and op name: a cell separator and an HTML tag
TAIL = " a|b<i>x</i>"


@pytest.fixture(scope="module")
def markdown(tmp_path_factory) -> str:
    """`diff --format md` of compare_base -> compare_test with TAIL on every name (B runs
    three host ops A does not, so names reach the conclusion and the host-op table)."""
    folder = tmp_path_factory.mktemp("named")
    paths = []
    for name in ("compare_base", "compare_test"):
        data = json.loads(gzip.decompress(corpus(f"gpu/{name}.json.gz").read_bytes()))
        for event in data["traceEvents"]:
            if event.get("cat") in ("kernel", "cpu_op"):
                event["name"] += TAIL
        paths.append(folder / f"{name}.json")
        paths[-1].write_text(json.dumps(data))
    src = str(Path(__file__).resolve().parents[2] / "src")
    code = f"import sys; sys.path.insert(0, {src!r}); from kinetoscope.cli import main; main()"
    done = subprocess.run([sys.executable, "-c", code, "diff", *map(str, paths), "--format", "md"],
                          capture_output=True, text=True, timeout=120)  # fmt: skip
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_the_names_reach_the_markdown(markdown):
    """Otherwise the checks below would pass vacuously: the names are in the conclusion,
    the kernel table and the host-op table."""
    assert markdown.count("All2All\\_Pooled\\_Req a\\|b") >= 2
    assert "vectorized\\_elementwise\\_kernel a\\|b" in markdown


def test_no_html_from_a_name_reaches_the_markdown(markdown):
    # the old writer printed `| appeared | All2All_Pooled_Req a\|b<i>x</i> | ...` and the
    # conclusion `All2All_Pooled_Req a|b<i>x</i> (156 us self CPU/step)`
    assert "<i>" not in markdown and "</i>" not in markdown
    assert "\\<i\\>x\\</i\\>" in markdown


def test_a_pipe_in_a_name_stays_in_its_cell(markdown):
    """Every row of every table has its header's number of cells: an unescaped `|` in a
    name would add one."""
    tables = re.findall(r"((?:^\|.*\|\n)+)", markdown, flags=re.M)
    assert len(tables) >= 5
    for table in tables:
        cells = [len(re.split(r"(?<!\\)\|", row)) for row in table.splitlines()]
        assert len(set(cells)) == 1, table
