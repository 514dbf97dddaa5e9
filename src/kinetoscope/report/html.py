"""Self-contained HTML: explain, diff and multi-rank pages from one template set.

Every page is one file: the stylesheet and scripts (templates/assets) are
inlined, nothing is fetched at view time. Colours are CSS variables with a
light and a dark palette (prefers-color-scheme, or Jupyter's dark theme), so
the same output reads in a browser and in a notebook either way. Every number
goes through kinetoscope.formatting.units as in the text and Markdown reports (`fmt_us`,
3 significant digits; `fmt_pct`, one decimal; the timeline script mirrors `fmt_us`).

The explain page is a list of section partials (`SECTIONS`, one file each in
templates/sections/): a new Report section is a new partial and a name here.
Only layout happens in this module; the numbers come from the Report, the
timeline payload from `Report.interactive` (pipeline/interactive.py), the timelines of
the diff and multi-rank pages from `pipeline.timeline_sides`.
"""

from __future__ import annotations

import json
from functools import cache
from importlib import resources
from pathlib import PurePath
from typing import Any

from .._version import __version__
from ..errors import UsageError
from ..formatting.escaping import inert
from ..formatting.units import fmt_pct, fmt_us
from .evidence import evidence_line, short_name
from .model import Report
from .run_text import run_line, version_parts

#: The explain page, top to bottom: templates/sections/<name>.html.j2 each.
SECTIONS = [
    "header",
    "verdict",
    "quality",
    "timeline",
    "steps",
    "llm",
    "findings",
    "kernel_types",
    "streams",
    "kernels",
    "ops",
    "not_checked",
]

#: The account's classes and their CSS class, in the order the verdict lists them.
DECOMPOSITION = (
    ("device", "device"),
    ("python", "other"),
    ("dispatch", "dispatch"),
    ("data", "data"),
    ("sync_stall", "sync"),
    ("external", "external"),
    ("one_time", "once"),
    ("untraced", "untraced"),
    ("profiler", "profiler"),
)


def _shown(value: Any) -> Any:
    """Every plain string a template prints passes `inert` (then autoescaping): an
    RTL override in a kernel name must not reorder the page, nor NUL or ESC land
    in it. Markup (our own stylesheet, scripts, JSON payloads) is left as it is."""
    from markupsafe import Markup

    if isinstance(value, str) and not isinstance(value, Markup):
        return inert(value)
    return value


@cache
def _environment():
    try:
        import jinja2
    except ImportError:
        raise UsageError("HTML output needs jinja2: pip install 'kinetoscope[html]'") from None
    env = jinja2.Environment(
        loader=jinja2.PackageLoader("kinetoscope.report", "templates"),
        autoescape=True,
        trim_blocks=True,
        lstrip_blocks=True,
        finalize=_shown,
    )
    env.filters["us"] = fmt_us
    env.filters["pct"] = fmt_pct  # the text and Markdown form: one printed digit everywhere
    env.filters["short"] = short_name
    env.filters["line"] = evidence_line
    env.globals.update(run_line=run_line, version_parts=version_parts)
    return env


@cache
def _assets() -> dict[str, Any]:
    """The stylesheet and scripts, inlined into every page (marked safe: our own files)."""
    from markupsafe import Markup

    folder = resources.files("kinetoscope.report") / "templates" / "assets"
    return {
        "css": Markup(folder.joinpath("style.css").read_text(encoding="utf-8")),
        "timeline_js": Markup(folder.joinpath("timeline.js").read_text(encoding="utf-8")),
        "timeline_input_js": Markup(
            folder.joinpath("timeline_input.js").read_text(encoding="utf-8")
        ),
        "tables_js": Markup(folder.joinpath("tables.js").read_text(encoding="utf-8")),
    }


def script_json(value: Any):
    """JSON safe inside a <script> element: no `</script>` or `<!--` can end it early."""
    from markupsafe import Markup

    text = json.dumps(value, separators=(",", ":"), allow_nan=False)
    return Markup(text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026"))


def decomposition(report: Report) -> list[dict[str, Any]]:
    """The window account, class by class: each class's share of the whole window and
    its time per step (the class's total over the step count, None without steps), so
    the larger share always has the larger time per step; empty when the report carries
    no account."""
    shares = report.verdict.account
    if not shares:
        return []
    us = report.verdict.account_us
    steps = report.trace.window.get("steps") or 0
    words = report.decomposition_words
    return [
        {
            "words": words.get(key, key),
            "share": shares.get(key, 0.0),
            "per_step_us": us.get(key, 0.0) / steps if steps else None,
            "css": css,
        }
        for key, css in DECOMPOSITION
        if shares.get(key, 0.0) > 0
    ]


def render_page(template: str, standalone: bool = True, **context: Any) -> str:
    """Render `template` (which extends page.html.j2) with the shared assets."""
    env = _environment()
    context.setdefault("has_timeline", bool(context.get("timeline_json")))
    return env.get_template(template).render(
        assets=_assets(), standalone=standalone, version=__version__, **context
    )


def render_html(report: Report, standalone: bool = True) -> str:
    _environment()  # a clear error first when jinja2 is missing
    interactive = report.interactive() if report.interactive is not None else None
    return render_page(
        "explain.html.j2",
        standalone=standalone,
        title=report.trace.path,
        report=report,
        sections=SECTIONS,
        ranked_findings=list(enumerate(report.findings)),  # engine's order, payload index
        decomposition=decomposition(report),
        interactive=interactive,
        timeline_json=script_json(interactive["timeline"]) if interactive else None,
    )


def notebook_html(report: Report) -> str | None:
    """Jupyter's display of a Report (`Report._repr_html_`): the page as a fragment, or
    None (plain repr) where jinja2 is not installed."""
    try:
        return render_html(report, standalone=False)
    except UsageError:
        return None


def render_diff_html(diff, sections: list, more_line, sides=(), timelines_after: int = -1) -> str:
    """`kinetoscope diff --format html`: compare/render.py's sections on the shared page, and
    with `sides` (each run's timeline, `pipeline.timeline_sides.diff_sides`) the two
    timelines and findings after section number `timelines_after`, drawn by the same script
    as explain's."""
    _environment()  # a clear error first when jinja2 is missing
    shown = [timeline_side(side) for side in sides]
    return render_page(
        "diff.html.j2",
        title=f"diff {diff.a.path} {diff.b.path}",
        a_path=diff.a.path,
        b_path=diff.b.path,
        sections=sections,
        more_line=more_line,
        sides=shown,
        timelines_after=timelines_after,
        has_timeline=bool(shown),
    )


def timeline_side(side: dict[str, Any]) -> dict[str, Any]:
    """One run's timeline on a page of several (macros.html.j2 `run_timeline`), from the
    data `pipeline.timeline_sides.timeline_side` built: its payload as script JSON and its
    findings in reading order; the indices are the payload's finding numbers, as on the
    explain page, and `key` ties the cards to this timeline."""
    return {
        "key": side["key"],
        "caption": side["caption"],
        "label": side["label"],
        "timeline_json": script_json(side["timeline"]),
        "findings": list(enumerate(side["findings"])),
        "per_step": side["per_step"],
    }


def render_ranks_html(report, sides: list[dict[str, Any]] = (), llm: dict | None = None) -> str:
    """Multi-rank `explain DIR --format html` (a multirank.MultiRankReport), with the
    timelines of the ranks in `sides` (`pipeline.timeline_sides.timeline_side` each) under
    the ranks table, and the LLM passes lined up across ranks (`llm`: notes, head and rows
    of `ranks.llm`'s table)."""
    _environment()
    return render_page(
        "ranks.html.j2",
        title=f"{len(report.ranks)} ranks",
        report=report,
        ranks=list(report.ranks.items()),
        ranked_findings=report.findings,  # ranks.compare.merged_findings' order
        folder=_common_folder([s.path for s in report.ranks.values()]),
        sides=[timeline_side(side) for side in sides],
        has_timeline=bool(sides),
        llm=llm,
    )


def _common_folder(paths: list[str]) -> str:
    """The folder every rank's trace is in ("" when they are spread): named once above the
    table, so the table's trace column can show file names."""
    folders = {str(PurePath(p).parent) for p in paths}
    return folders.pop() if len(folders) == 1 else ""
