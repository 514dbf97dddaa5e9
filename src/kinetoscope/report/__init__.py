"""Renderers: lay out document models (the `Report` of `model.py`, and what the build
step in `pipeline/` returns) as text, Markdown, JSON and HTML.

Renderers compute nothing and read no Trace: what they show was measured by
`analysis/`, judged by `rules/` and gathered by `pipeline/` before they run.
"""
