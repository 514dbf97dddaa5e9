"""The trace cache (`trace/cache.py`): a trace read once is mapped, not parsed, the next
time, and the cache is never wrong: a changed file, a damaged entry, two writers at
once, a full or read-only folder and the size bound all leave the same report."""

from __future__ import annotations

import gzip
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from kinetoscope.api import explain
from kinetoscope.report.html import render_html
from kinetoscope.report.markdown import render_markdown
from kinetoscope.report.text import render_text
from kinetoscope.trace import cache, cache_store, load
from tests.conftest import REPO, corpus, corpus_files, kernel, launch, op, write_trace
from tests.corpus_families import by_family

SMALL = "gpu/cuda_event_sync.json.gz"


@pytest.fixture
def folder(tmp_path, monkeypatch) -> Path:
    """A cache folder of this test's own, caching traces of any size."""
    root = tmp_path / "cache"
    monkeypatch.setenv(cache.FOLDER_ENV, str(root))
    monkeypatch.delenv(cache.NO_CACHE_ENV, raising=False)
    monkeypatch.delenv(cache.SIZE_ENV, raising=False)
    monkeypatch.setattr(cache, "MIN_BYTES", 0)
    return root


def mapped(trace) -> bool:
    """Whether the Trace's columns come from an entry (a view of a file map)."""
    return isinstance(trace.ts.base, np.memmap)


def reports(trace, html: bool = False) -> tuple[str, ...]:
    report = explain(trace)
    out = (report.to_json(), render_text(report, width=120, color=False), render_markdown(report))
    return (*out, render_html(report)) if html else out


def names(root: Path) -> list[str]:
    return sorted(p.name for p in root.iterdir() if p.is_dir()) if root.exists() else []


@pytest.mark.parametrize("path", by_family(corpus_files()), ids=lambda p: str(p.relative_to(REPO)))
def test_report_from_the_cache_is_byte_identical(folder, path):
    parsed = load(path)  # the first read parses, and stores
    assert not mapped(parsed)
    assert len(cache.entries(folder)) == 1
    warm = load(path)
    assert mapped(warm)  # the second maps the entry
    # html for a few traces: the whole corpus in three formats is the guarantee
    html = path.name in ("cuda_event_sync.json.gz", "resnet_train_ns.pt.trace.json.gz")
    assert reports(warm, html) == reports(parsed, html)


def test_a_modified_trace_is_not_served(folder, tmp_path):
    path = tmp_path / "t.json"
    events = [op("aten::mm", 0, 50), launch(10, 5, 7), kernel("gemm", 20, 30, 7)]
    write_trace(path, events)
    assert load(path).dur.max() == 50
    stamp = os.stat(path)
    # same size and the same modification time: only the content fingerprint tells
    write_trace(path, [{**events[0], "dur": 60}, *events[1:]])
    os.utime(path, ns=(stamp.st_atime_ns, stamp.st_mtime_ns))
    assert os.stat(path).st_size == stamp.st_size
    again = load(path)
    assert not mapped(again) and again.dur.max() == 60
    assert len(names(folder)) == 1  # the entry of the old content went with it
    assert load(path).dur.max() == 60


@pytest.mark.parametrize("damage", ["truncate a column", "garble the metadata", "foreign"])
def test_a_damaged_entry_is_rebuilt_with_one_line(folder, damage, capsys):
    path = corpus(SMALL)
    expected = reports(load(path))
    [entry] = [folder / n for n in names(folder)]
    if damage == "truncate a column":
        column = entry / "ts.npy"
        column.write_bytes(column.read_bytes()[:-8])
    elif damage == "garble the metadata":
        meta = entry / cache_store.META
        data = bytearray(meta.read_bytes())
        data[len(data) // 2] ^= 0xFF
        meta.write_bytes(bytes(data))
    else:  # another trace's entry under this one's name
        other = load(corpus("gpu/cuda_event_sync_multi_stream.json.gz"))
        assert other is not None
        [source] = [folder / n for n in names(folder) if n != entry.name]
        (entry / cache_store.META).write_bytes((source / cache_store.META).read_bytes())
    capsys.readouterr()
    rebuilt = load(path)
    err = capsys.readouterr().err
    assert not mapped(rebuilt)
    assert err.count("\n") == 1 and "ignored and rebuilt" in err
    assert reports(rebuilt) == expected
    warm = load(path)  # the rebuilt entry serves the next load, silently
    assert mapped(warm) and capsys.readouterr().err == ""
    assert reports(warm) == expected


def test_two_writers_at_once_leave_one_entry(folder):
    """Two processes read an uncached trace at the same time: both finish, one entry."""
    path = corpus("gpu/resnet_train_ns.pt.trace.json.gz")  # over MIN_BYTES: cached by default
    code = "import sys; from kinetoscope.trace import load; print(len(load(sys.argv[1])))"
    env = {**os.environ, "PYTHONPATH": str(REPO / "src")}
    runs = [
        subprocess.Popen([sys.executable, "-c", code, str(path)], env=env, stdout=subprocess.PIPE)
        for _ in range(2)
    ]
    outs = [run.communicate(timeout=120)[0] for run in runs]
    assert [run.returncode for run in runs] == [0, 0]
    assert outs[0] == outs[1] == f"{len(load(path))}\n".encode()
    assert len(names(folder)) == 1  # no temporary folder left behind either
    assert mapped(load(path))


def test_the_loser_of_the_rename_keeps_the_winners_entry(folder):
    path = corpus(SMALL)
    trace = load(path)
    [entry] = names(folder)
    marker = folder / entry / "winner"
    marker.touch()
    cache.store(path, trace)  # as a second writer finishing late would
    assert names(folder) == [entry] and marker.exists()


def test_least_recently_used_entries_are_evicted(folder, monkeypatch):
    a, b, c = map(corpus, (SMALL, "gpu/triton_example.json.gz", "gpu/compare_base.json.gz"))
    sizes = {}
    for path in (a, b, c):
        load(path)
        sizes[path] = cache.entries(folder)[-1].bytes
    cache.clear(folder)
    # room for the two largest entries, not for three
    monkeypatch.setenv(cache.SIZE_ENV, str(sum(sorted(sizes.values())[1:])))
    load(a)
    load(b)
    os.utime(folder / cache.entries(folder)[0].name / "used", (1, 1))  # a: long unused
    assert mapped(load(b))  # b used again
    load(c)
    kept = {e.trace for e in cache.entries(folder)}
    assert kept == {str(b.resolve()), str(c.resolve())}


def test_an_entry_larger_than_the_bound_is_not_written(folder, monkeypatch):
    monkeypatch.setenv(cache.SIZE_ENV, "1KB")
    assert len(load(corpus(SMALL))) > 0
    assert names(folder) == []


def test_an_unwritable_folder_means_no_cache(tmp_path, monkeypatch, capsys):
    blocker = tmp_path / "a file"
    blocker.write_text("")
    monkeypatch.setenv(cache.FOLDER_ENV, str(blocker / "cache"))  # mkdir fails
    monkeypatch.setattr(cache, "MIN_BYTES", 0)
    path = corpus(SMALL)
    monkeypatch.setenv(cache.NO_CACHE_ENV, "1")
    expected = reports(load(path))
    monkeypatch.delenv(cache.NO_CACHE_ENV)
    assert reports(load(path)) == expected
    assert capsys.readouterr().err == ""  # a library caller hears nothing


def test_no_cache_reads_and_writes_nothing(folder, monkeypatch):
    monkeypatch.setenv(cache.NO_CACHE_ENV, "1")
    load(corpus(SMALL))
    assert names(folder) == []


def test_what_is_not_a_regular_file_is_never_cached(folder, tmp_path):
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    assert cache.key_of(fifo) is None
    assert cache.key_of(Path("-")) is None
    assert cache.key_of(corpus(SMALL)) is not None


def test_small_traces_are_not_cached_by_default(folder, monkeypatch):
    monkeypatch.setattr(cache, "MIN_BYTES", 1 << 20)
    assert cache.key_of(corpus(SMALL)) is None  # 3 KB
    assert cache.key_of(corpus("gpu/resnet_train_ns.pt.trace.json.gz")) is not None  # 1.1 MB


QWEN = "gpu/tracelens_h100__Qwen_Qwen1.5-0.5B-Chat__1016005.json.gz"  # 0.44 MB, 8.6 MB of JSON
SGLANG = "gpu/tracelens_sglang_decode__sglang_Qwen3-8B_decode.json.gz"  # 0.04 MB, 0.59 MB


def test_a_gzip_is_judged_by_the_text_it_inflates_to(folder, monkeypatch, tmp_path):
    """The bound is on what the parser reads: a gzip under 1 MB on disk whose JSON is 8.6
    MB is cached; one whose JSON is 0.59 MB is not, nor is that JSON written plain."""
    monkeypatch.setattr(cache, "MIN_BYTES", 1 << 20)
    qwen, sglang = corpus(QWEN), corpus(SGLANG)
    assert qwen.stat().st_size < cache.MIN_BYTES and cache.key_of(qwen) is not None
    assert cache.key_of(sglang) is None
    plain = tmp_path / "sglang.json"
    plain.write_bytes(gzip.decompress(sglang.read_bytes()))
    assert cache.key_of(plain) is None
    load(qwen)
    assert mapped(load(qwen))  # the second load reads the entry


def test_a_gzip_trailer_never_shrinks_a_file_below_its_size(folder, monkeypatch, tmp_path):
    """A gzip cut off or of several members has a trailer that says less than the file:
    judged by its size on disk, as a file over the bound it is cached."""
    monkeypatch.setattr(cache, "MIN_BYTES", 1 << 20)
    cut = tmp_path / "cut.json.gz"
    data = corpus("gpu/resnet_train_ns.pt.trace.json.gz").read_bytes()
    cut.write_bytes(data[:-4] + bytes(4))  # the trailer's length read as 0
    assert cut.stat().st_size >= cache.MIN_BYTES and cache.key_of(cut) is not None


def test_a_trace_that_would_not_read_back_exactly_is_not_stored(folder, tmp_path):
    path = corpus(SMALL)
    trace = load(path, max_memory="auto")
    cache.clear(folder)
    trace.meta.distributed = {"rank": 0, "skew": float("nan")}  # NaN != NaN: not exact
    cache.store(path, trace)
    assert names(folder) == []
    trace.meta.distributed = None
    trace.flops = {}  # a dict, as a Trace built in a test holds: no columns
    cache.store(path, trace)
    assert names(folder) == []


def test_out_of_core_loads_map_the_entry(folder):
    path = corpus("gpu/resnet_train_ns.pt.trace.json.gz")
    parsed = load(path, out_of_core=True)
    assert parsed.out_of_core is not None
    warm = load(path, out_of_core=True)
    assert mapped(warm) and warm.out_of_core == parsed.out_of_core
    assert reports(warm) == reports(parsed)
