"""Rules run in one order whatever imported their modules first.

A pool or cluster worker starts fresh and imports the rule modules in
`RULE_MODULES` order; the parent may already have imported one family early (a
command, a test). The report's `not_checked` list follows rule order, so the
two used to differ (a Dask run of `explain DIR` did not equal the local one).
"""

from __future__ import annotations

import subprocess
import sys

from kinetoscope.rules.engine import load_rules

_ORDER = "from kinetoscope.rules.engine import load_rules; print(' '.join(load_rules()))"


def _order_in_fresh_process(first_import: str) -> list[str]:
    code = f"import {first_import}\n{_ORDER}" if first_import else _ORDER
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    return out.stdout.split()


def test_rule_order_does_not_depend_on_import_order():
    plain = _order_in_fresh_process("")
    for early in ("kinetoscope.rules.memory", "kinetoscope.rules.llm", "kinetoscope.rules.quality"):
        assert _order_in_fresh_process(early) == plain, early
    assert list(load_rules()) == plain
    assert plain.index("memory-peak") > plain.index("cold-start")
