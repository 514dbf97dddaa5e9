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
from functools import cache, partial
from importlib import resources
from pathlib import PurePath
from typing import Any

from .._version import __version__
from ..errors import UsageError
from ..formatting.escaping import inert
from ..formatting.units import fmt_pct, fmt_us
from . import comm_render, lines_render
from .evidence import display, evidence_line, short_name
from .model import Report
from .phrases import ACCOUNT_CSS, account_line, path_rows
from .run_text import run_line, version_parts

#: The explain page, top to bottom: templates/sections/<name>.html.j2 each.
SECTIONS = [
    "header",
    "verdict",
    "quality",
    "path",
    "timeline",
    "steps",
    "llm",
    "moe",
    "modules",
    "lines",
    "findings",
    "kernel_types",
    "streams",
    "communication",
    "kernels",
    "kernel_view",
    "ops",
    "not_checked",
]


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
    # a cell's hover title: the whole name as every view shows it (no enable_if return type)
    env.filters["display"] = partial(display, limit=1000)
    env.filters["line"] = evidence_line
    env.globals.update(
        run_line=run_line, version_parts=version_parts, comm=comm_render, lines_render=lines_render
    )
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
        for key, css in ACCOUNT_CSS.items()
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
        path=path_view(report),
        interactive=interactive,
        timeline_json=script_json(interactive["timeline"]) if interactive else None,
    )


def path_view(report: Report) -> dict[str, Any]:
    """The critical path for the page: its largest parts, the account in one line, and a
    band of its segments placed by time across the window (left and width in %)."""
    segments = report.critical_path.get("segments", [])
    if not segments:
        return {}
    lo = segments[0]["start_us"]
    span = max(segments[-1]["start_us"] + segments[-1]["dur_us"] - lo, 1e-9)
    words = report.decomposition_words
    band = [
        {
            "left": 100 * (s["start_us"] - lo) / span,
            "width": 100 * s["dur_us"] / span,
            "css": ACCOUNT_CSS.get(s["class"], ""),
            "title": f"{words.get(s['class'], s['class'])}: {display(s['name'], 200)} "
            f"{fmt_us(s['dur_us'])} at +{fmt_us(s['start_us'])}",
        }
        for s in segments
        if s["dur_us"] >= span / 4000  # below a pixel of a wide page
    ]
    return {
        "account": account_line(report),
        "rows": path_rows(report),
        "band": band,
        "per_step": bool(report.trace.window.get("steps")),
        "resolution_us": report.critical_path.get("resolution_us", 0.0),
    }


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
