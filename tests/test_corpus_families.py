"""The corpus families (tests/corpus_families.py) cover the corpus: each trace is in one
family, each family has its representative, which runs by default while the other
traces' cases carry the `corpus` marker. A trace added to tests/data/traces and not placed
in a family fails here, so it is neither silently skipped by the corpus-wide tests'
default run nor silently added to it."""

from __future__ import annotations

from .conftest import CORPUS, corpus_files
from .corpus_families import FAMILIES, REPRESENTATIVES, by_family, membership_problems, relative


def test_every_corpus_trace_is_in_exactly_one_family():
    assert membership_problems(corpus_files()) == []


def test_every_family_has_its_representative_in_the_corpus():
    for family in FAMILIES:
        assert family.representative not in family.members, family.name
        assert (CORPUS / family.representative).is_file(), family.name
    assert len(REPRESENTATIVES) == len(FAMILIES)


def test_a_trace_in_no_family_is_named():
    new = CORPUS / "gpu" / "new_trace.json.gz"
    assert membership_problems([*corpus_files(), new]) == [
        "gpu/new_trace.json.gz is in no family: add it to a family in "
        "tests/corpus_families.py (its members, or a new family if the analyzer sees "
        "something new in it)"
    ]
    gone = [p for p in corpus_files() if relative(p) != "gpu/compare_test.json.gz"]
    assert membership_problems(gone) == [
        "gpu/compare_test.json.gz is listed in tests/corpus_families.py but not in the corpus"
    ]


def test_only_representatives_run_by_default(pytestconfig):
    params = by_family(corpus_files())
    default = [relative(p.values[0]) for p in params if not p.marks]
    assert sorted(default) == sorted(REPRESENTATIVES)
    assert all(m.name == "corpus" for p in params for m in p.marks)
    # the marker is declared, and the default run deselects it (`pytest -m corpus` runs it)
    assert any(line.startswith("corpus:") for line in pytestconfig.getini("markers"))
    assert "not corpus" in " ".join(pytestconfig.getini("addopts"))
