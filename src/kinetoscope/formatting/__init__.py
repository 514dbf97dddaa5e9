"""How values become text: units (`fmt_us`, `fmt_pct`), the one escaper for
strings from a trace (`inert`), and strict JSON. Leaves: every layer may import
them; they import nothing of kinetoscope's but `errors`.
"""
