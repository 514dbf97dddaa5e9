"""Judgement: rules read analysis results and return `Finding`s.

One module per family of `docs/rules.md`; each rule registers itself with
`@rule(...)` from `rules.base`, and `rules.engine.run_rules` runs them all.
"""
