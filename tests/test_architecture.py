"""The package's shape, read from the source with `ast` (no import runs): no import
cycles, function-level imports included; each layer imports only the layers below it
(trace -> analysis -> rules -> pipeline -> report renders, docs/architecture.md); torch
only where a workload runs; few modules loose at the top of the package.

An import counts where it is written, at the top of a module or inside a function: a
function-level import is a dependency all the same, only a later one. `from pkg import
name` is an edge to the submodule `pkg.name` where there is one, else to `pkg`.
"""

from __future__ import annotations

import ast
from functools import cache
from pathlib import Path

SRC = Path(__file__).resolve().parent.parent / "src"
PACKAGE = "kinetoscope"

#: Edges that still cross a layer, each with why and what would end it; only these may
#: cross one, and the list only shrinks (`test_allowed_edges_still_exist`).
ALLOWED_EDGES = {
    # kernel-name decoding (a string parser, no Trace) that evidence lines shorten names
    # with and every renderer's display names (`evidence.display`) go through: to move to a
    # leaf names package, or the evidence model to carry short names
    ("kinetoscope.report.evidence", "kinetoscope.analysis.kernel_names"),
}

#: Leaves every layer may import: the version, errors, progress reporting, formatting.
LEAVES = frozenset({"_version", "errors", "progress", "formatting"})

#: What each layer may import from the package (top-level modules count by name).
MAY_IMPORT = {
    "_version": frozenset(),
    "progress": frozenset(),
    "formatting": frozenset(),
    "errors": frozenset({"formatting"}),
    "trace": LEAVES,
    "analysis": LEAVES | {"trace"},
    "rules": LEAVES | {"trace", "analysis"},
    # renderers: the document models and the rule types they hold, nothing that measures
    "report": LEAVES | {"rules"},
    # the build step: runs analyses and rules, fills report's models
    "pipeline": LEAVES | {"trace", "analysis", "rules", "report"},
    # slice writes its output as every command does (files.outputs)
    "slicing": LEAVES | {"trace", "files"},
    "files": LEAVES,
    "capture": LEAVES | {"files"},
}

#: Where torch may be imported: capture runs workloads; a tune trial is a capture run;
#: integrations are callbacks inside the user's (torch) training loop.
TORCH_ALLOWED = ("kinetoscope.capture", "kinetoscope.tune.trial_run", "kinetoscope.integrations")

#: Modules at the top of the package, `__init__` and `__main__` included (9 since `entry`,
#: the console entry that must import nothing heavy before its Ctrl-C guard is set).
MAX_TOP_MODULES = 9


@cache
def modules() -> dict[str, tuple[Path, bool]]:
    """Dotted module name -> (file, is a package `__init__`)."""
    out = {}
    for path in sorted((SRC / PACKAGE).rglob("*.py")):
        parts = list(path.relative_to(SRC).with_suffix("").parts)
        is_pkg = parts[-1] == "__init__"
        if is_pkg:
            parts = parts[:-1]
        out[".".join(parts)] = (path, is_pkg)
    return out


def imported(name: str) -> tuple[set[str], set[str]]:
    """(modules of this package that `name` imports, external top-level names it imports)."""
    mods = modules()
    path, is_pkg = mods[name]
    here = name.split(".") if is_pkg else name.split(".")[:-1]
    internal: set[str] = set()
    external: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = here[: len(here) - (node.level - 1)]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            subs = [f"{target}.{a.name}" for a in node.names if f"{target}.{a.name}" in mods]
            targets = subs + ([target] if len(subs) < len(node.names) else [])
        elif isinstance(node, ast.Import):
            targets = [a.name for a in node.names]
        else:
            continue
        for t in targets:
            if t.split(".")[0] != PACKAGE:
                external.add(t.split(".")[0])
                continue
            while t not in mods:  # `import kinetoscope.x.y` of a name inside a module
                t = t.rpartition(".")[0]
            if t != name:
                internal.add(t)
    return internal, external


@cache
def graph() -> dict[str, set[str]]:
    return {m: imported(m)[0] for m in modules()}


def layer(name: str) -> str:
    """The package a module belongs to (`trace`, `report`, ...), or its own name at the
    top (`api`, `cli`, `errors`); the package root is `__init__`."""
    parts = name.split(".")
    return parts[1] if len(parts) > 1 else "__init__"


def cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found = []
    for root in edges:
        if root in index:
            continue
        work = [(root, iter(sorted(edges[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            v, children = work[-1]
            for w in children:
                if w not in index:
                    index[w] = low[w] = len(index)
                    stack.append(w)
                    on_stack.add(w)
                    work.append((w, iter(sorted(edges[w]))))
                    break
                if w in on_stack:
                    low[v] = min(low[v], index[w])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[v])
                if low[v] == index[v]:
                    component = []
                    while True:
                        w = stack.pop()
                        on_stack.discard(w)
                        component.append(w)
                        if w == v:
                            break
                    if len(component) > 1:
                        found.append(sorted(component))
    return found


def without_allowed(edges: dict[str, set[str]]) -> dict[str, set[str]]:
    return {m: {t for t in ts if (m, t) not in ALLOWED_EDGES} for m, ts in edges.items()}


def test_the_import_reader_sees_every_kind_of_import():
    """The reader itself: a relative `from . import module`, a function-level import and a
    `from ..pkg import name` each give their edge, else the checks below could pass blind."""
    g = graph()
    assert "kinetoscope.trace.steps" in g["kinetoscope.trace.model"]  # from .steps import
    assert "kinetoscope.progress" in g["kinetoscope.capture.session"]  # from .. import progress
    assert "kinetoscope.capture.session" in g["kinetoscope"]  # inside __getattr__
    assert "kinetoscope.trace" in g["kinetoscope.api"]  # from .trace import Trace, load


def test_cycles_are_found():
    """The cycle finder on a graph with one cycle of three and a tail: it must report it."""
    edges = {"a": {"b"}, "b": {"c"}, "c": {"a", "d"}, "d": set()}
    assert cycles(edges) == [["a", "b", "c"]]
    assert cycles({"a": {"b"}, "b": set()}) == []


def test_no_import_cycles():
    assert cycles(without_allowed(graph())) == []


def test_allowed_edges_still_exist():
    """An allow-listed edge that is gone must leave the list, so the list only shrinks."""
    g = graph()
    assert [edge for edge in sorted(ALLOWED_EDGES) if edge[1] not in g[edge[0]]] == []


def test_each_layer_imports_only_what_it_may():
    wrong = []
    for name, targets in without_allowed(graph()).items():
        may = MAY_IMPORT.get(layer(name))
        if may is None:
            continue
        wrong += [(name, t) for t in sorted(targets) if layer(t) not in may | {layer(name)}]
    assert wrong == []


def test_report_neither_reads_a_trace_nor_measures():
    """The renderers lay out models: no module of report/ imports trace/, analysis/ or
    pipeline/ (beyond the listed exceptions), whatever MAY_IMPORT says."""
    wrong = [
        (name, t)
        for name, targets in without_allowed(graph()).items()
        if layer(name) == "report"
        for t in targets
        if layer(t) in ("trace", "analysis", "pipeline")
    ]
    assert wrong == []


def test_only_capture_imports_torch():
    """The analyzer installs and runs without torch (docs/architecture.md)."""
    users = [m for m in modules() if {"torch", "torchvision"} & imported(m)[1]]
    assert users  # capture's workloads do: the reader sees torch imports
    assert [m for m in users if not m.startswith(TORCH_ALLOWED)] == []


def test_few_modules_at_the_top_of_the_package():
    top = sorted(p.name for p in (SRC / PACKAGE).glob("*.py"))
    assert len(top) <= MAX_TOP_MODULES, top


def test_the_version_is_read_in_one_place():
    """Only `_version` assigns `__version__`; every other module imports it from there,
    never from the package root (which imports most of them while it initialises)."""
    assigners, from_root = [], []
    for name, (path, _) in modules().items():
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, ast.Assign | ast.AnnAssign):
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                if any(isinstance(t, ast.Name) and t.id == "__version__" for t in targets):
                    assigners.append(name)
            if not isinstance(node, ast.ImportFrom):
                continue
            source = (node.module or "").rpartition(".")[2]
            if source != "_version" and any(a.name == "__version__" for a in node.names):
                from_root.append(name)
    assert assigners == ["kinetoscope._version"]
    assert from_root == []


#: Tests of the whole product rather than of one package: they stay at tests/.
WHOLE_PRODUCT_TESTS = {
    "test_architecture",
    "test_corpus_families",  # every corpus trace in one family, one representative each
    "test_fuzz",
    "test_fuzz_resources",  # bombs and floods through the console entry in a child
    "test_fuzz_signals",  # SIGINT/SIGTERM at random moments of profile and explain
    "test_fuzz_table",  # bench/fuzz_table.py, the per-surface table of every fuzz log
    "test_gpu_kit",
    "test_gpu_recordings",  # the GPU kit's recordings, read without a GPU
    "test_progress",
    "test_readme",
    "test_requires",
}


def test_tests_mirror_the_package():
    """Each folder of tests/ holding tests is named for a package of kinetoscope, and only
    the whole-product tests sit at the top, so a module's tests are where its package is."""
    tests = Path(__file__).resolve().parent
    packages = {p.parent.name for p in (SRC / PACKAGE).glob("*/__init__.py")}
    folders = {p.parent.name for p in tests.glob("*/test_*.py")}
    assert folders and folders <= packages, folders - packages
    assert {p.stem for p in tests.glob("test_*.py")} == WHOLE_PRODUCT_TESTS
