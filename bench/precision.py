"""Precision and recall of `explain` against hand-written expectations.

Each file in tests/expectations/ names one trace (`trace`, relative to
tests/data/traces) and what reading that trace proves: the `regime`, the rule ids
that `must_fire` and those that `must_not_fire`, each with a one-line reason.
Scoring, per rule id (the verdict's regime counts as a rule that fired):

- a must-fire that fires is a true positive (TP), one that does not a false negative (FN);
- a must-not-fire that fires is a false positive (FP);
- the expected `regime` is a must-fire, and every other regime a must-not-fire.

Rules an expectation does not mention are unjudged. Prints a per-rule table and
the list of disagreements; exit 1 when there is any.

    python bench/precision.py                     # all expectations
    python bench/precision.py --only dlrm_worker0
    python bench/precision.py --recorded DIR      # also the `recorded = "NAME"` ones: DIR/NAME.json

The recorded traces are CPU loops the tests record with torch (tests/precision_traces.py);
a pytest run leaves them under its basetemp, /tmp/pytest-of-$USER/pytest-N/
precision_traces.
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass
from pathlib import Path

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10
    import tomli as tomllib

REPO = Path(__file__).resolve().parents[1]
EXPECTATIONS = REPO / "tests" / "expectations"
CORPUS = REPO / "tests" / "data" / "traces"
REGIMES = ("overhead-bound", "compute-bound", "mixed", "host-only", "data-bound", "sync-bound",
           "compile-window")  # fmt: skip


@dataclass(frozen=True)
class Check:
    """One judged (trace, rule) pair: whether it must fire, and why."""

    name: str  # expectation file stem
    rule: str
    must_fire: bool
    reason: str


@dataclass(frozen=True)
class Outcome:
    check: Check
    fired: bool

    @property
    def kind(self) -> str:
        if self.check.must_fire:
            return "TP" if self.fired else "FN"
        return "FP" if self.fired else "TN"


def load_expectation(path: Path) -> dict:
    with path.open("rb") as fh:
        return tomllib.load(fh)


def expectation_files(only: list[str] | None = None) -> list[Path]:
    files = sorted(EXPECTATIONS.glob("*.toml"))
    return [f for f in files if only is None or f.stem in only]


def checks_of(name: str, spec: dict) -> list[Check]:
    """The judged pairs of one expectation file, the regime expanded to all regimes."""
    out = []
    regime = spec.get("regime")
    if regime:
        reason = spec.get("regime_reason", "")
        out.append(Check(name, regime, True, reason))
        out += [Check(name, r, False, f"the regime is {regime}: {reason}") for r in REGIMES
                if r != regime]  # fmt: skip
    listed = {c.rule for c in out if c.must_fire}
    for item in spec.get("must_fire", []):
        out.append(Check(name, item["id"], True, item["reason"]))
    for item in spec.get("must_not_fire", []):
        if item["id"] in listed:
            raise ValueError(f"{name}: {item['id']} is both expected and excluded")
        out = [c for c in out if not (c.rule == item["id"] and not c.must_fire)]
        out.append(Check(name, item["id"], False, item["reason"]))
    return out


def trace_path(spec: dict, recorded: dict[str, Path] | None = None) -> Path:
    if "recorded" in spec:
        if not recorded or spec["recorded"] not in recorded:
            raise FileNotFoundError(f"recorded trace {spec['recorded']!r} not available")
        return recorded[spec["recorded"]]
    return CORPUS / spec["trace"]


def fired_ids(path: Path) -> set[str]:
    """Finding ids `explain` reports on the trace (with those folded into another finding on
    the same cause), plus its verdict's regime."""
    import kinetoscope

    report = kinetoscope.explain(path)
    return {i for f in report.findings for i in (f.id, *f.merged)} | {report.verdict.regime}


def evaluate(checks: list[Check], fired: set[str]) -> list[Outcome]:
    return [Outcome(c, c.rule in fired) for c in checks]


def score(outcomes: list[Outcome]) -> dict[str, dict[str, int]]:
    """Per rule id: counts of TP, FP, FN, TN."""
    table: dict[str, dict[str, int]] = {}
    for o in outcomes:
        row = table.setdefault(o.check.rule, {"TP": 0, "FP": 0, "FN": 0, "TN": 0})
        row[o.kind] += 1
    return table


def ratio(num: int, den: int) -> str:
    return f"{num / den:.2f}" if den else "-"


def render(table: dict[str, dict[str, int]]) -> str:
    lines = [f"{'rule':26} {'TP':>4} {'FP':>4} {'FN':>4} {'TN':>4} {'precision':>10} {'recall':>7}"]
    total = {"TP": 0, "FP": 0, "FN": 0, "TN": 0}
    for rule in sorted(table):
        r = table[rule]
        for k in total:
            total[k] += r[k]
        lines.append(
            f"{rule:26} {r['TP']:4} {r['FP']:4} {r['FN']:4} {r['TN']:4} "
            f"{ratio(r['TP'], r['TP'] + r['FP']):>10} {ratio(r['TP'], r['TP'] + r['FN']):>7}"
        )
    t = total
    lines.append(
        f"{'overall':26} {t['TP']:4} {t['FP']:4} {t['FN']:4} {t['TN']:4} "
        f"{ratio(t['TP'], t['TP'] + t['FP']):>10} {ratio(t['TP'], t['TP'] + t['FN']):>7}"
    )
    return "\n".join(lines)


def run(only: list[str] | None = None, recorded: dict[str, Path] | None = None) -> list[Outcome]:
    outcomes = []
    for file in expectation_files(only):
        spec = load_expectation(file)
        try:
            path = trace_path(spec, recorded)
        except FileNotFoundError as exc:
            print(f"skip {file.stem}: {exc} (pass --recorded DIR)", file=sys.stderr)
            continue
        if not path.exists():
            print(f"skip {file.stem}: {path} not found", file=sys.stderr)
            continue
        outcomes += evaluate(checks_of(file.stem, spec), fired_ids(path))
    return outcomes


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", nargs="*", help="expectation names (file stems)")
    parser.add_argument("--recorded", type=Path, help="folder holding the recorded NAME.json")
    args = parser.parse_args(argv)
    recorded = None
    if args.recorded is not None:
        recorded = {p.stem: p for p in args.recorded.glob("*.json")}
    outcomes = run(args.only, recorded)
    print(render(score(outcomes)))
    wrong = [o for o in outcomes if o.kind in ("FP", "FN")]
    if wrong:
        print("\ndisagreements:")
        for o in wrong:
            print(f"  {o.kind} {o.check.name}: {o.check.rule} -- {o.check.reason}")
    return 1 if wrong else 0


if __name__ == "__main__":
    sys.exit(main())
