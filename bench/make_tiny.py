"""Write a gzip trace of N tiny host events, fast: the auditor's 50-million-event case.

Each event is `{"ph":"X","cat":"cpu_op","name":"aten::add","pid":1,"tid":1,"ts":T,"dur":1}`
with T = 10^13 + 2 x its index (a leading 1: JSON numbers have no leading zeros), so
the events follow one another on one thread. The text is
made in blocks of 10,000 events from one template whose high digits of T are
replaced per block (`bytes.replace`), and gzipped at level 1 as it is made: 50
million events (4.2 GB of JSON) take about a minute here, not the tens of minutes
of a `json.dumps` per event.

    python bench/make_tiny.py 50000000 /tmp/tiny50m.json.gz
"""

from __future__ import annotations

import argparse
import zlib
from pathlib import Path

BLOCK = 10_000
_EVENT = b'{"ph":"X","cat":"cpu_op","name":"aten::add","pid":1,"tid":1,"ts":%s,"dur":1},'
_HEAD = b'{"traceEvents":['
_MARK = b"@@@@@@@@@"  # "1" and 8 digits of the block number: up to 10^8 blocks


def write_tiny(path: Path, events: int, level: int = 1) -> Path:
    """Write `events` tiny events (a multiple of 10,000 is exact; rounded up) to `path`."""
    template = b"".join(_EVENT % (_MARK + b"%05d" % (2 * i)) for i in range(BLOCK))
    deflate = zlib.compressobj(level, zlib.DEFLATED, 16 + zlib.MAX_WBITS)
    with open(path, "wb") as handle:
        handle.write(deflate.compress(_HEAD))
        blocks = max(-(-events // BLOCK), 1)
        for block in range(blocks):
            text = template.replace(_MARK, b"1%08d" % block)
            handle.write(deflate.compress(text if block < blocks - 1 else text[:-1]))
        handle.write(deflate.compress(b"]}") + deflate.flush())
    return path


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("events", type=int)
    parser.add_argument("out", type=Path)
    parser.add_argument("--level", type=int, default=1, help="gzip level (default 1)")
    args = parser.parse_args()
    write_tiny(args.out, args.events, args.level)
    print(f"{args.out}: {args.out.stat().st_size:,} bytes")


if __name__ == "__main__":
    main()
