"""`kinetoscope tune`: the closed loop from diagnosis to a measured, noise-checked change.

`knobs` (what to try, from the verdict) -> `trials` (each in a subprocess that
runs `trial_run` with `clock`) -> `decide` (the statistics) -> `session` (the
loop); `report/tune_render.py` renders it (table, text, JSON, plot). Only
`trial_run` imports torch.
"""
