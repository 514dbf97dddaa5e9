"""One distributed job read as a whole: a trace per rank, compared.

`multirank` finds the rank files and runs one worker per rank (`executors`: a
process pool, Dask or Ray); each worker measures its trace (`summary`, figures
from `analysis/`), then `compare` finds stragglers and collective overlap and
`llm` compares serving passes across ranks. `report` gathers the result for the
renderers in `report/`.
"""
