"""Parse once: the columns of every trace read, kept on disk for the next command.

`load` asks `fetch` before parsing and gives `store` what it built. An entry
(`cache_store.py`: one `.npy` per column, mapped back) lives in the cache folder
(`$KINETOSCOPE_CACHE`, else `$XDG_CACHE_HOME/kinetoscope`, else
`~/.cache/kinetoscope`) under a key made of everything the built Trace depends
on: the file's real path and the name the user gave it (warnings quote it), its
size, modification time and a fingerprint of its content (blake2b of its length,
first and last MiB: a rewrite that keeps size and mtime is still seen at either
end), the kinetoscope version and the entry format. The loader has no option that
changes the Trace (the split and out-of-core paths build the same columns;
`--max-memory` only sets `out_of_core` and `memory_budget`, which `load` sets
after either path), so none is in the key.

Never wrong, never in the way:
- an input that is not a regular file (stdin, a FIFO) is never cached;
- an entry that cannot be trusted (`CorruptEntry`) is removed, said in one line on
  stderr, and the trace is parsed and stored again;
- an entry is written into a private temporary folder, then renamed into place in
  one step; a writer that loses the race to another drops its copy;
- any OSError while storing (read-only folder, full disk) leaves the load as if
  there were no cache: at most one progress line says so;
- the folder is kept under a size bound (`KINETOSCOPE_CACHE_SIZE`, else what
  `kinetoscope cache --max-size` saved, else 4 GB) by evicting the entries used
  least recently (each use touches the entry's `used` file);
- `KINETOSCOPE_NO_CACHE=1` (`--no-cache`) turns it all off.

Traces whose text is under `MIN_BYTES` are not cached: they parse in less time than an
entry's forty files take to write and map. The text is what the parser reads: a gzip
file's inflated size (its trailer says it), not its size on disk. A gzipped trace is
8-35x smaller on disk than its JSON: one of 0.44 MB inflates to 8.6 MB, which takes
0.2 s to build each time and about 0.03 s to read back from an entry.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import shutil
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from .. import progress
from .._version import __version__
from ..errors import input_name
from . import cache_store
from .budget import parse_size
from .model import Trace
from .source import GZIP_MAGIC, is_regular_file

NO_CACHE_ENV = "KINETOSCOPE_NO_CACHE"
FOLDER_ENV = "KINETOSCOPE_CACHE"
SIZE_ENV = "KINETOSCOPE_CACHE_SIZE"
DEFAULT_MAX_BYTES = 4 << 30
#: smallest file (bytes on disk) worth an entry
MIN_BYTES = 1 << 20
_FINGERPRINT = 1 << 20  # bytes hashed at each end of the file
_USED = "used"
_ABOUT = "about.json"
_MAX_SIZE_FILE = "max-size"
_TMP = ".tmp-"
_STALE_TMP_S = 3600  # a temporary folder this old belongs to a writer that died


def enabled() -> bool:
    return os.environ.get(NO_CACHE_ENV, "") in ("", "0")


def folder() -> Path:
    """The cache folder (not created here)."""
    if own := os.environ.get(FOLDER_ENV):
        return Path(own)
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(Path.home(), ".cache")
    return Path(base) / "kinetoscope"


def max_bytes(root: Path | None = None) -> int:
    """The size bound: `KINETOSCOPE_CACHE_SIZE`, else the saved one, else 4 GB (an
    unreadable value counts as unset: a cache setting never stops a command)."""
    for text in (os.environ.get(SIZE_ENV), _saved_max(root or folder())):
        if text:
            try:
                size = parse_size(text.strip())
            except Exception:  # noqa: BLE001 - a bad setting is ignored, not fatal
                continue
            if size is not None:
                return size
    return DEFAULT_MAX_BYTES


def _saved_max(root: Path) -> str | None:
    try:
        return (root / _MAX_SIZE_FILE).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return None


def save_max_bytes(size: int, root: Path | None = None) -> None:
    root = root or folder()
    root.mkdir(parents=True, exist_ok=True)
    (root / _MAX_SIZE_FILE).write_text(f"{size}\n", encoding="utf-8")


@dataclass(frozen=True)
class Key:
    """Where an input's entry lives: `source` names the file (every version of it),
    `text` is the whole key, checked against the entry's own."""

    source: str
    text: str

    @property
    def name(self) -> str:
        return f"{self.source}-{_hash(self.text)}"


def _hash(text: str) -> str:
    return hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=12).hexdigest()


def key_of(path: Path) -> Key | None:
    """The key of a regular file whose text is at least `MIN_BYTES`, else None (not
    cached)."""
    if not is_regular_file(path):
        return None
    try:
        real = os.path.realpath(path)
        with open(path, "rb") as handle:
            stat = os.fstat(handle.fileno())
            if _text_bytes(handle, stat.st_size) < MIN_BYTES:
                return None
            handle.seek(0)
            fingerprint = hashlib.blake2b(str(stat.st_size).encode(), digest_size=16)
            fingerprint.update(handle.read(_FINGERPRINT))
            handle.seek(max(stat.st_size - _FINGERPRINT, 0))
            fingerprint.update(handle.read(_FINGERPRINT))
    except OSError:
        return None
    source = json.dumps([real, input_name(path)])
    text = json.dumps(
        [
            cache_store.FORMAT,
            __version__,
            source,
            stat.st_size,
            stat.st_mtime_ns,
            fingerprint.hexdigest(),
        ]
    )
    return Key(_hash(source), text)


def _text_bytes(handle, size: int) -> int:
    """The bytes the parser reads from the open file `handle` of `size` bytes: its size,
    or a gzip file's inflated size from the trailer's last four bytes (ISIZE: the last
    member's length mod 2**32; never taken as less than the file itself, so a file cut
    off or of several members is judged at least by its size on disk, as before)."""
    if size < 18 or handle.read(2) != GZIP_MAGIC:  # 18: a gzip header and trailer
        return size
    handle.seek(size - 4)
    return max(size, int.from_bytes(handle.read(4), "little"))


def fetch(path: Path) -> Trace | None:
    """The cached Trace of `path`, or None (not cached, no entry, or a bad entry,
    which is removed with one line on stderr)."""
    if not enabled() or (key := key_of(path)) is None:
        return None
    entry = folder() / key.name
    if not entry.is_dir():
        return None
    try:
        trace = cache_store.read(str(entry), key.text, input_name(path))
    except cache_store.CorruptEntry as exc:
        print(
            f"kinetoscope: cache entry {entry} ignored and rebuilt: {exc}",
            file=sys.stderr,
        )
        shutil.rmtree(entry, ignore_errors=True)
        return None
    with contextlib.suppress(OSError):  # a read-only cache is still read
        os.utime(entry / _USED)
    return trace


def store(path: Path, trace: Trace) -> None:
    """Keep `trace` (just built from `path`) for the next load; never raises."""
    if not enabled() or (key := key_of(path)) is None:
        return
    root = folder()
    size = cache_store.entry_bytes(trace)
    bound = max_bytes(root)
    if size > bound:
        return
    tmp = None
    try:
        root.mkdir(parents=True, exist_ok=True)
        tmp = tempfile.mkdtemp(prefix=f"{_TMP}{key.name}-", dir=root)
        if not cache_store.write(tmp, trace, key.text):
            return
        about = {"trace": os.path.realpath(path), "bytes": os.stat(path).st_size}
        Path(tmp, _ABOUT).write_text(json.dumps(about), encoding="utf-8")
        Path(tmp, _USED).touch()
        _remove_versions(root, key)
        try:
            os.rename(tmp, root / key.name)
        except OSError:  # another process put this entry in place first: keep its
            return
        tmp = None
        evict(root, bound, keep=key.name)
    except OSError as exc:
        progress.stage(f"cache not written ({exc.strerror or exc}); reading without it")
    finally:
        if tmp is not None:
            shutil.rmtree(tmp, ignore_errors=True)


def _remove_versions(root: Path, key: Key) -> None:
    """Entries of earlier versions of this file (same source, other key): a trace
    rewritten in place never leaves its old columns behind."""
    for entry in root.glob(f"{key.source}-*"):
        if entry.name != key.name:
            shutil.rmtree(entry, ignore_errors=True)


@dataclass(frozen=True)
class Entry:
    name: str
    trace: str  # the file it was built from
    bytes: int  # on disk
    used: float  # last use, seconds since the epoch


def entries(root: Path | None = None) -> list[Entry]:
    """The entries in the cache folder, least recently used first."""
    root = root or folder()
    out = []
    try:
        listing = list(root.iterdir())
    except OSError:
        return []
    for entry in listing:
        if entry.name.startswith(_TMP) or not entry.is_dir():
            continue
        try:
            about = json.loads((entry / _ABOUT).read_text(encoding="utf-8"))
            used = (entry / _USED).stat().st_mtime
            size = sum(f.stat().st_size for f in entry.iterdir())
        except (OSError, ValueError):
            about, used, size = {}, 0.0, _bytes_under(entry)
        trace = about.get("trace") if isinstance(about, dict) else None
        out.append(Entry(entry.name, str(trace or "?"), size, used))
    return sorted(out, key=lambda e: e.used)


def _bytes_under(entry: Path) -> int:
    try:
        return sum(f.stat().st_size for f in entry.rglob("*") if f.is_file())
    except OSError:
        return 0


def evict(root: Path, bound: int, keep: str | None = None) -> list[Entry]:
    """Remove least recently used entries until the folder holds at most `bound`
    bytes (`keep`, the entry just written, goes last), and temporary folders left by
    writers that died; the removed entries."""
    now = time.time()
    for tmp in root.glob(f"{_TMP}*"):
        try:
            if now - tmp.stat().st_mtime > _STALE_TMP_S:
                shutil.rmtree(tmp, ignore_errors=True)
        except OSError:
            pass
    listed = sorted(entries(root), key=lambda e: (e.name == keep, e.used))
    total = sum(e.bytes for e in listed)
    removed = []
    for entry in listed:
        if total <= bound:
            break
        shutil.rmtree(root / entry.name, ignore_errors=True)
        total -= entry.bytes
        removed.append(entry)
    return removed


def clear(root: Path | None = None) -> list[Entry]:
    """Remove every entry; the ones removed."""
    root = root or folder()
    gone = entries(root)
    for entry in gone:
        shutil.rmtree(root / entry.name, ignore_errors=True)
    return gone
