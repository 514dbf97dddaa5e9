"""Multi-rank `explain` through each executor (local pool, Dask, Ray) on many rank files.

Rank files are hard links (disk use stays that of 8 files) to the 8 DLRM rank
traces with `distributedInfo` removed, so each file's rank comes from its name
(`rank_0042.json`); with `--mb M` the 8 bases are first grown to about M MB
each by repeating them in time (bench/make_large.py). Each executor runs in a
fresh interpreter (what one CLI call pays) that reports its own wall time and
peak RSS (the driver's; the workers are other processes). `--startup` also
times starting and stopping a bare local cluster of each engine.

    PYTHONPATH=src nice -n 19 python bench/bench_executors.py --ranks 64 --executors local dask ray
    PYTHONPATH=src nice -n 19 python bench/bench_executors.py --ranks 1000 --mb 10 --executors dask
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import msgspec

sys.path.insert(0, str(Path(__file__).resolve().parent))
from make_large import Source, write_large  # noqa: E402

DLRM = Path(__file__).resolve().parents[1] / "tests/data/traces/multirank/dlrm_8ranks"

_DRIVER = """
import json, resource, sys, time
from pathlib import Path
start = time.perf_counter()
from kinetoscope.ranks.multirank import explain_ranks
report = json.loads(explain_ranks([Path(sys.argv[1])], int(sys.argv[3]), {}, "json",
                                  executor=sys.argv[2]))
print(json.dumps({"wall_s": time.perf_counter() - start, "ranks": len(report["ranks"]),
                  "driver_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}))
"""

_STARTUP = {
    "dask": "from dask.distributed import Client, LocalCluster\n"
    "c = LocalCluster(n_workers=2, threads_per_worker=1, dashboard_address=None)\n"
    "Client(c).close(); c.close()",
    "ray": "import ray\nray.init(num_cpus=2, include_dashboard=False); ray.shutdown()",
}


def make_bases(out: Path, mb: float) -> list[Path]:
    """The 8 DLRM ranks without distributedInfo, grown to about `mb` MB each."""
    bases = []
    for k, path in enumerate(sorted(DLRM.glob("*.json"))):
        target = out / f"base{k}_{mb:g}MB.json"
        if not target.exists():
            if mb <= 1:
                top = msgspec.json.decode(path.read_bytes())
                top.pop("distributedInfo", None)
                target.write_bytes(msgspec.json.encode(top))
            else:
                source = Source(path)
                source.top.pop("distributedInfo", None)
                write_large(source, int(mb * 1e6), target, compress=False)
        bases.append(target)
    return bases


def make_ranks(out: Path, bases: list[Path], ranks: int) -> Path:
    folder = out / f"ranks_{ranks}_{bases[0].stem.split('_')[1]}"
    folder.mkdir(exist_ok=True)
    for r in range(ranks):
        link = folder / f"rank_{r:04d}.json"
        if not link.exists():
            os.link(bases[r % len(bases)], link)
    return folder


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ranks", type=int, default=64)
    parser.add_argument("--mb", type=float, default=0, help="grow each base to ~MB (0: as is)")
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--executors", nargs="+", default=["local", "dask", "ray"])
    parser.add_argument("--startup", action="store_true")
    parser.add_argument("--out", type=Path, default=Path("/tmp/kinetoscope-ranks"))
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    folder = make_ranks(args.out, make_bases(args.out, args.mb), args.ranks)
    total = sum(p.stat().st_size for p in folder.iterdir()) / 1e6
    print(f"{args.ranks} rank files, {total:.0f} MB in all, jobs {args.jobs}, "
          f"load average {os.getloadavg()[0]:.1f}")  # fmt: skip
    print("| executor | wall (s) | driver peak RSS (MB) | ranks |")
    print("|---|---|---|---|")
    for name in args.executors:
        proc = subprocess.run(
            [sys.executable, "-c", _DRIVER, str(folder), name, str(args.jobs)],
            capture_output=True, text=True, check=False,
        )  # fmt: skip
        if proc.returncode:
            print(f"| {name} | failed: {proc.stderr.strip().splitlines()[-1]} | | |")
            continue
        r = json.loads(proc.stdout.strip().splitlines()[-1])
        print(f"| {name} | {r['wall_s']:.1f} | {r['driver_rss_mb']:.0f} | {r['ranks']} |")
    if args.startup:
        for name, code in _STARTUP.items():
            start = time.perf_counter()
            subprocess.run([sys.executable, "-c", code], capture_output=True, check=True)
            print(f"{name}: start + stop a 2-worker local cluster, interpreter included: "
                  f"{time.perf_counter() - start:.1f} s")  # fmt: skip


if __name__ == "__main__":
    main()
