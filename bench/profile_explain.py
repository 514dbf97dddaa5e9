"""Where `explain`'s time goes after the load: cProfile of `kinetoscope.explain(trace)`.

Loads FILE once (not profiled), then profiles building the whole report (every
analysis, every rule, the report sections) and prints the wall time, the top
functions by cumulative and by own time.

    PYTHONPATH=src python bench/profile_explain.py /tmp/large/resnet_train_ns_1000MB.json
"""

from __future__ import annotations

import argparse
import cProfile
import pstats
import time

import kinetoscope
from kinetoscope.trace.load import load


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("file")
    parser.add_argument("--top", type=int, default=40, help="functions listed per ordering")
    args = parser.parse_args()
    start = time.perf_counter()
    trace = load(args.file)
    print(f"load: {time.perf_counter() - start:.2f} s, {len(trace):,} events", flush=True)
    profiler = cProfile.Profile()
    start = time.perf_counter()
    profiler.enable()
    kinetoscope.explain(trace)
    profiler.disable()
    print(f"explain after load, under the profiler: {time.perf_counter() - start:.2f} s")
    stats = pstats.Stats(profiler)
    stats.sort_stats("cumulative").print_stats(args.top)
    stats.sort_stats("tottime").print_stats(args.top)


if __name__ == "__main__":
    main()
