"""The floor of a from-scratch build (docs/benchmarks.md, "Build throughput against its
floor"): what any bundle of this format must do per article, spread over every core. Each
source line is parsed, serialised as an Article and a summary, and both are compressed in
gzip 6, br 5 and zstd 3. Nothing else (no index, no sort, no files written).

    python bench/build_floor.py --src DIR [--jobs N]
"""

from __future__ import annotations

import argparse
import os
import time
import zlib
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import brotli
import orjson
import zstandard

SUMMARY = ("id", "language", "title", "summary", "category", "tags", "author", "image_url")


def _file(path: str) -> tuple[int, int]:
    zstd = zstandard.ZstdCompressor(level=3)
    count = out = 0
    with open(path, "rb") as fh:
        for line in fh:
            if not line.strip():
                continue
            record = orjson.loads(line)
            for body in (
                orjson.dumps(record),
                orjson.dumps({k: record.get(k) for k in SUMMARY}),
            ):
                out += len(zlib.compress(body, 6)) + len(brotli.compress(body, quality=5))
                out += len(zstd.compress(body))
            count += 1
    return count, out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--src", type=Path, required=True)
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    args = parser.parse_args()
    # Split files into pieces of lines would balance better; per-file jobs are what a
    # builder that parallelises by language gets, and with 9 files over 2 cores the tail is
    # at most one file.
    files = sorted(str(p) for p in args.src.glob("*.jsonl"))
    start = time.perf_counter()
    with ProcessPoolExecutor(args.jobs) as pool:
        results = list(pool.map(_file, files))
    seconds = time.perf_counter() - start
    articles = sum(n for n, _ in results)
    print(
        orjson.dumps(
            {
                "articles": articles,
                "seconds": round(seconds, 2),
                "per_second": round(articles / seconds),
            }
        ).decode()
    )


if __name__ == "__main__":
    main()
