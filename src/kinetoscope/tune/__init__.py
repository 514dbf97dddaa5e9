"""`kinetoscope tune`: the closed loop from diagnosis to a measured, noise-checked change.

`knobs` (what to try, from the verdict) -> `trials` (each in a subprocess that
runs `trial_run` with `clock`) -> `decide` (the statistics) -> `session` (the
loop) -> `document` (the JSON); `report/tune_render.py` renders the table, text
and plot. Only `trial_run` imports torch.
"""
