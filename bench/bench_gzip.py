"""Is gzip decompression a bottleneck of loading a `.json.gz` trace? ISA-L vs zlib.

Decompresses the file the way the loader streams it (1 MB reads, one
decompressor object) with ISA-L (`isal.isal_zlib`, what the loader uses) and
with the standard library's `zlib`, then times `kinetoscope.load` on the
`.json.gz` and on the same `.json` in fresh subprocesses (`bench_load.measure`).

    python bench/make_large.py --sizes 200 --gzip 200
    python bench/bench_gzip.py bench/out/resnet_train_ns_200MB.json.gz \\
        bench/out/resnet_train_ns_200MB.json
"""

from __future__ import annotations

import argparse
import os
import sys
import time
import zlib
from pathlib import Path

from isal import isal_zlib

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_load import REPO, measure  # noqa: E402

_LOAD = "import sys, kinetoscope; kinetoscope.load(sys.argv[1])"


def inflate(path: Path, module) -> tuple[float, float, int]:
    """(wall s, CPU s, bytes out) of streaming decompression with `module`."""
    start, cpu = time.perf_counter(), time.process_time()
    inflater = module.decompressobj(31)
    total = 0
    with open(path, "rb") as handle:
        while chunk := handle.read(1 << 20):
            total += len(inflater.decompress(chunk))
        total += len(inflater.flush())
    return time.perf_counter() - start, time.process_time() - cpu, total


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("gz", type=Path)
    parser.add_argument("plain", type=Path, help="the same trace uncompressed")
    args = parser.parse_args(argv)
    env = dict(os.environ, PYTHONPATH=str(REPO / "src"))
    print(f"{args.gz.name}: {args.gz.stat().st_size / 1e6:.0f} MB compressed")
    for name, module in (("isal", isal_zlib), ("zlib", zlib)):
        wall, cpu, size = inflate(args.gz, module)
        print(
            f"  inflate with {name}: {wall:.2f} s wall, {cpu:.2f} s CPU, "
            f"{size / 1e6 / cpu:.0f} MB/s of JSON per CPU second"
        )
    for path in (args.gz, args.plain):
        result = measure([sys.executable, "-c", _LOAD, str(path)], env)
        print(
            f"  kinetoscope.load({path.name}): {result['wall_s']:.2f} s wall, "
            f"{result['cpu_s']:.2f} s CPU, peak RSS {result['peak_rss_bytes'] / 1e6:.0f} MB"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
