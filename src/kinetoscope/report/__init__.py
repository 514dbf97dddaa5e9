"""Renderers: turn analysis results and reports into text, Markdown, JSON, HTML.

Renderers compute nothing; they format what analysis/ and rules/ produced.
"""
