"""The per-surface fuzz table that issues 33 and 36 ask for, from the fuzz logs.

Every fuzz surface logs one line per run to `$KINETOSCOPE_FUZZ_LOG.runs`
(`SURFACE COMMAND OUTCOME SECONDS`, tests/fuzz_log.py); the in-process command fuzz
of tests/test_fuzz.py writes `COMMAND EXIT_CODE SECONDS` to `$KINETOSCOPE_FUZZ_LOG.commands`,
read here as surface `cli` (exit 0 or, for `check`, 1: ok; 2: clean error; else internal).
Give the log base names (FILE, or FILE.runs / FILE.commands); one Markdown table
comes out, a row per surface and a total, and with `--commands` a row per surface
and command. Any outcome other than ok and clean-error is a finding.

    python bench/fuzz_table.py /tmp/fuzz.log /tmp/other.log
    python bench/fuzz_table.py --commands /tmp/fuzz.log.runs
"""

from __future__ import annotations

import argparse
import sys
from collections import Counter, defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from tests.fuzz_log import OUTCOMES  # noqa: E402 - the one list of outcomes

COLUMNS = [
    ("clean errors", ("clean-error",)),
    ("internal errors", ("internal-error", "traceback")),
    ("hangs", ("hang",)),
    ("over budget", ("over-budget", "over-disk")),
    ("control characters", ("control-char",)),
    ("other findings", ("bad-output", "no-draw")),
]


def runs(path: Path):
    """(surface, command, outcome) of each line of one log file (logs written before the
    runs' durations were dropped carry a fourth field, read and ignored)."""
    legacy = path.name.endswith(".commands")
    for number, line in enumerate(path.read_text().splitlines(), 1):
        fields = line.split()
        if not fields:
            continue
        if legacy and len(fields) == 3:
            command, code, _ = fields
            ok = ("0", "1") if command == "check" else ("0",)
            outcome = "ok" if code in ok else "clean-error" if code == "2" else "internal-error"
            yield "cli", command, outcome
        elif len(fields) in (3, 4) and fields[2] in OUTCOMES:
            yield fields[0], fields[1], fields[2]
        else:
            raise SystemExit(f"{path}:{number}: not a fuzz log line: {line!r}")


def files(names: list[str]) -> list[Path]:
    found = []
    for name in names:
        path = Path(name)
        if path.suffix in (".runs", ".commands"):
            found.append(path)
        else:
            found += [p for p in (Path(f"{name}.runs"), Path(f"{name}.commands")) if p.exists()]
    return found


def table(rows: dict[str, Counter], first: str) -> str:
    head = [first, "runs", *(name for name, _ in COLUMNS)]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    total = Counter()
    for key in sorted(rows):
        total.update(rows[key])
        lines.append(_row(f"`{key}`", rows[key]))
    if len(rows) > 1:
        lines.append(_row("**all**", total))
    return "\n".join(lines)


def _row(label: str, count: Counter) -> str:
    cells = [label, f"{sum(count.values()):,}"]
    cells += [f"{sum(count[o] for o in outcomes):,}" for _, outcomes in COLUMNS]
    return "| " + " | ".join(cells) + " |"


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("logs", nargs="+", help="fuzz log base names or .runs/.commands files")
    parser.add_argument("--commands", action="store_true", help="a row per surface and command")
    args = parser.parse_args(argv)
    rows: dict[str, Counter] = defaultdict(Counter)
    paths = files(args.logs)
    if not paths:
        raise SystemExit("no fuzz log found (FILE.runs or FILE.commands)")
    for path in paths:
        for surface, command, outcome in runs(path):
            key = f"{surface} {command}" if args.commands else surface
            rows[key][outcome] += 1
    print(table(rows, "surface command" if args.commands else "surface"))


if __name__ == "__main__":
    main()
