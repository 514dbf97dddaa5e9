"""Writing what kinetoscope produces without ever destroying what the user has.

Three promises, kept here for every command that writes a file:

- an output that resolves to one of the run's inputs (the same path, a symlink
  to it, a hard link: same `st_dev`/`st_ino`) is refused before anything is
  written;
- content goes to a temporary file in the target folder and appears under its
  final name in one step (a crash or Ctrl-C never leaves half a file there);
- an existing file is never replaced unless the user said `--force`: the new
  one gets the next free name (`report_2.html`, `report_3.html`, ...) and the
  command says so. An output that is not a regular file (`/dev/null`,
  `/dev/stdout`, a FIFO) is a stream the user chose: it is written straight
  into, never renamed over (a rename would replace the device node itself) and
  never numbered (`/dev/null_2` is a file nobody asked for). `-o -` is standard
  output, where a command writes text (a picture's format needs a file name);
- a new file's mode follows the umask (0644 under umask 022), as a shell's
  redirection would create it, whatever the temporary file was created with;
- text ends with a newline, on standard output or in a file (`emit`), so a
  shell prompt or `cat a b` never runs on from a report's last line.

Names are claimed with `os.link`, which fails when the name exists, so two runs
writing into one folder at once cannot take the same name; where hard links are
not supported an `O_EXCL` create claims it.

`published()` lists every file this process published, so an interrupted run
can say what it kept.
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat
import sys
import tempfile
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import IO

from ..errors import UsageError
from ..formatting.escaping import inert

#: Files published by this process, in order (what an interrupted run kept).
_PUBLISHED: list[Path] = []

#: errno values of `os.link` meaning "this filesystem has no hard links here".
_NO_HARD_LINKS = {errno.EPERM, errno.EXDEV, errno.EMLINK, errno.ENOSYS, errno.EOPNOTSUPP}

_TEMP_PREFIX = ".kinetoscope-"


def published() -> list[Path]:
    return list(_PUBLISHED)


def same_file(a: Path, b: Path) -> bool:
    """True when a and b are one file (through symlinks and hard links)."""
    try:
        sa, sb = os.stat(a), os.stat(b)
    except OSError:
        return False
    return (sa.st_dev, sa.st_ino) == (sb.st_dev, sb.st_ino)


def is_stdout(output: Path | str | None) -> bool:
    """`-o -`: standard output."""
    return output is not None and str(output) == "-"


def refuse_inputs(output: Path, inputs: Iterable[Path]) -> None:
    """UsageError when `output` is (or resolves to) one of `inputs` (standard output
    never is, even where an input is standard input: both are named `-`)."""
    if is_stdout(output):
        return
    for source in inputs:
        if same_file(output, source) or Path(output).absolute() == Path(source).absolute():
            raise UsageError(
                f"{output}: is the input {source}; kinetoscope never writes over its input "
                "(choose another output file)"
            )


def split_name(name: str) -> tuple[str, str]:
    """`a.pt.trace.json.gz` -> (`a`, `.pt.trace.json.gz`); `r.html` -> (`r`, `.html`)."""
    stem, ext = name, ""
    if stem.endswith(".gz"):
        stem, ext = stem[:-3], ".gz"
    base, dot, last = stem.rpartition(".")
    if dot and base and last:
        stem, ext = base, "." + last + ext
    if stem.endswith(".pt.trace"):
        stem, ext = stem[: -len(".pt.trace")], ".pt.trace" + ext
    return stem, ext


def numbered(path: Path, n: int) -> Path:
    """The n-th candidate name: the path itself, then `<stem>_2<ext>`, `<stem>_3<ext>`, ..."""
    if n == 1:
        return path
    stem, ext = split_name(path.name)
    return path.with_name(f"{stem}_{n}{ext}")


def make_folder(path: Path) -> list[Path]:
    """Create `path` (and parents); returns the folders created, outermost first.

    UsageError when it cannot be created, so an unwritable destination fails
    before any work is done.
    """
    path = Path(path)
    missing = [p for p in [path, *path.parents] if not p.exists()]
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise UsageError(
            f"{path}: cannot create the output folder ({exc.strerror or exc})"
        ) from None
    return missing[::-1]


def remove_empty_folders(created: list[Path]) -> None:
    """Undo `make_folder` for a run that wrote nothing: remove those folders if still empty."""
    for folder in reversed(created):
        with contextlib.suppress(OSError):
            folder.rmdir()


@contextlib.contextmanager
def staged(folder: Path, suffix: str = "") -> Iterator[Path]:
    """A temporary file in `folder` (same filesystem, so publishing is a rename), removed
    on the way out unless it was published (moved away) meanwhile."""
    handle, raw = tempfile.mkstemp(prefix=_TEMP_PREFIX, suffix=suffix + ".tmp", dir=folder)
    os.close(handle)
    os.chmod(raw, 0o666 & ~_umask())
    try:
        yield Path(raw)
    finally:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(raw)


def publish(pairs: list[tuple[Path, Path]], force: bool = False) -> list[Path]:
    """Give each staged temp file its final name; all of a group share one number.

    `pairs` is [(temp, wanted final path)]. Without `force`, no existing file
    is replaced: the group moves to the first number n at which every name is
    free (`_2`, `_3`, ...). Either the whole group appears or none of it.
    """
    for n in range(1, 1_000_000):
        targets = [numbered(final, n) for _, final in pairs]
        if not force and any(os.path.lexists(t) for t in targets):
            continue
        done: list[Path] = []
        try:
            for (temp, _), target in zip(pairs, targets, strict=True):
                if force:
                    os.replace(temp, target)
                else:
                    _claim(temp, target)
                done.append(target)
        except FileExistsError:  # another run took one of the names just now
            _unlink_all(done)
            continue
        except BaseException:
            _unlink_all(done)
            raise
        for temp, _ in pairs:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(temp)
        _PUBLISHED.extend(targets)
        return targets
    raise UsageError(f"{pairs[0][1]}: no free name left beside it")


def write_file(
    path: Path,
    write: Callable[[IO[bytes]], None],
    *,
    force: bool = False,
    inputs: Iterable[Path] = (),
) -> Path:
    """Write one output file safely (see the module docstring); returns where it went."""
    path = Path(path)
    if is_stdout(path):
        sys.stdout.flush()
        write(sys.stdout.buffer)
        sys.stdout.buffer.flush()
        return path
    refuse_inputs(path, inputs)
    if path.is_dir():
        raise UsageError(f"{path}: is a folder; give a file name to write to")
    if _is_stream(path):
        try:
            with open(path, "wb") as handle:
                write(handle)
        except OSError as exc:
            raise UsageError(f"{path}: cannot write: {exc.strerror or exc}") from None
        return path
    folder = path.parent
    if not folder.is_dir():
        raise UsageError(f"{path}: cannot write: folder {folder} does not exist")
    try:
        with staged(folder, split_name(path.name)[1]) as temp:
            with open(temp, "wb") as handle:
                write(handle)
            [written] = publish([(temp, path)], force)
    except OSError as exc:
        raise UsageError(f"{path}: cannot write: {exc.strerror or exc}") from None
    return written


def write_text(path: Path, text: str, **options) -> Path:
    """`write_file` for text (UTF-8), ending with a newline."""
    text = text if text.endswith("\n") else text + "\n"
    if is_stdout(path):
        sys.stdout.write(text)
        return Path(path)
    return write_file(path, lambda f: f.write(text.encode("utf-8")), **options)


def emit(text: str, output: Path | None, *, force: bool = False, inputs=()) -> None:
    """A command's text, the one way: standard output without `-o` or with `-o -`,
    else the file (with `say_where`); ending with a newline either way."""
    if output is None:
        output = Path("-")
    say_where(output, write_text(output, text, force=force, inputs=inputs))


def say_where(wanted: Path, written: Path, file=None) -> None:
    """`wrote X`, with the reason when X is not the name asked for (nothing for
    standard output: what was written is there)."""
    out = file or sys.stderr
    if is_stdout(written):
        return
    if Path(written) != Path(wanted):
        print(inert(f"{wanted} exists (use --force to replace it); wrote {written}"), file=out)
    else:
        print(inert(f"wrote {written}"), file=out)


def _claim(temp: Path, target: Path) -> None:
    """Publish temp as target unless target exists (FileExistsError then)."""
    try:
        os.link(temp, target)
    except FileExistsError:
        raise
    except OSError as exc:
        if exc.errno not in _NO_HARD_LINKS:
            raise
        fd = os.open(target, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o666)
        os.close(fd)
        os.replace(temp, target)


def _is_stream(path: Path) -> bool:
    """True when `path` exists and is not a regular file: a character device
    (`/dev/null`, a terminal), a FIFO or a socket."""
    try:
        mode = os.stat(path).st_mode
    except OSError:
        return False
    return not stat.S_ISREG(mode) and not stat.S_ISDIR(mode)


def _unlink_all(paths: list[Path]) -> None:
    for path in paths:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(path)


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def claim_folder(path: Path, force: bool = False) -> Path:
    """A folder of this run's own: `path`, else `path_2`, `path_3`, ... (claimed with
    `mkdir`, which fails when the name exists, so two runs never share one); with `force`,
    `path` itself even when it exists (files in it are then replaced by name)."""
    path = Path(path)
    make_folder(path.parent)
    if force:
        make_folder(path)
        return path
    for n in range(1, 1_000_000):
        candidate = numbered(path, n)
        try:
            candidate.mkdir()
        except FileExistsError:
            continue
        except OSError as exc:
            raise UsageError(
                f"{candidate}: cannot create the folder ({exc.strerror or exc})"
            ) from None
        return candidate
    raise UsageError(f"{path}: no free name left beside it")
