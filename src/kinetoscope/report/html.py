"""Self-contained HTML report: one file, inline CSS and SVG, no external resources.

The timeline is an inline SVG with the host and device lanes over the active
window, step boundaries, and a marker for every piece of evidence with a
timestamp. Only coordinate mapping happens here; every number comes from the
`Report`.
"""

from __future__ import annotations

from ..errors import UsageError
from ..units import fmt_us
from .evidence import evidence_line, short_name
from .model import Report

SVG_WIDTH = 1000
LANE_Y = {"host": 24, "device": 56}
LANE_HEIGHT = 22


def render_html(report: Report, standalone: bool = True) -> str:
    try:
        import jinja2
    except ImportError:
        raise UsageError("HTML output needs jinja2: pip install 'kinetoscope[html]'") from None
    env = jinja2.Environment(
        loader=jinja2.PackageLoader("kinetoscope.report", "templates"),
        autoescape=True,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters["us"] = fmt_us
    env.filters["short"] = short_name
    env.filters["line"] = evidence_line
    return env.get_template("report.html.j2").render(
        report=report, timeline=_svg_geometry(report), standalone=standalone
    )


def _svg_geometry(report: Report) -> dict:
    tl = report.timeline
    span = max(tl.end_us - tl.start_us, 1e-9)

    def x(ts: float) -> float:
        return round((ts - tl.start_us) / span * SVG_WIDTH, 2)

    lanes = []
    for name, intervals in tl.lanes.items():
        rects = [(x(s), round(max(x(e) - x(s), 0.5), 2)) for s, e in intervals]
        lanes.append({"name": name, "y": LANE_Y.get(name, 88), "rects": rects})
    steps = [
        {"label": label, "x": x(s), "w": round(max(x(e) - x(s), 0.5), 2), "odd": i % 2 == 1}
        for i, (label, s, e) in enumerate(tl.steps)
    ]
    marks = [
        {
            "x": x(m.ts_us),
            "finding": m.finding,
            "severity": m.severity,
            "title": f"{m.finding}: {short_name(m.label)} at +{fmt_us(m.ts_us)}",
        }
        for m in tl.marks
        if tl.start_us <= m.ts_us <= tl.end_us
    ]
    ticks = [
        {"x": round(SVG_WIDTH * k / 4, 2), "label": f"+{fmt_us(tl.start_us + span * k / 4, 1)}"}
        for k in range(5)
    ]
    return {
        "width": SVG_WIDTH,
        "height": 124,
        "lane_height": LANE_HEIGHT,
        "lanes": lanes,
        "steps": steps,
        "marks": marks,
        "ticks": ticks,
    }
