"""The costs of a sharded from-scratch build (docs/publishing.md, "Building on many machines"):
a single `--full` build, then the plan, each of N shards one after the other (each as one
machine of this size would run it, with every core), and the merge; checks that both give the
same bundle byte for byte. Run it under `flock /tmp/bench.lock` on a shared machine.

    python bench/sharded_build.py --corpus DIR --work DIR --shards 4 --json FILE
"""

from __future__ import annotations

import argparse
import hashlib
import os
import shutil
import subprocess
import sys
import time
from datetime import UTC, datetime
from pathlib import Path

import orjson

REPO = Path(__file__).resolve().parents[1]
BUILD = [sys.executable, str(REPO / "scripts" / "build_bundles.py")]


def timed(args: list[str]) -> float:
    started = time.monotonic()
    subprocess.run([*BUILD, *args], check=True, stdout=subprocess.DEVNULL)
    return round(time.monotonic() - started, 2)


def files(out: Path) -> dict[str, str]:
    return {
        p.relative_to(out).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(out.rglob("*"))
        if p.is_file() and p.name != "verified.json"
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--corpus", type=Path, required=True, help="bench/gen_corpus.py output")
    parser.add_argument("--work", type=Path, required=True, help="scratch directory (emptied)")
    parser.add_argument("--shards", type=int, default=4)
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    if args.work.exists():
        shutil.rmtree(args.work)
    args.work.mkdir(parents=True)
    articles = sum(1 for p in args.corpus.glob("*.jsonl") for _ in p.open("rb"))
    jobs = ["--jobs", str(args.jobs)]
    single = timed(["--src", str(args.corpus), "--out", str(args.work / "single"), "--full", *jobs])
    work = args.work / "work"
    plan = timed(["--step", "plan", "--src", str(args.corpus), "--work", str(work), *jobs])
    shards = [
        timed(
            [
                "--step",
                "shard",
                "--src",
                str(args.corpus),
                "--work",
                str(work),
                "--shard",
                str(k),
                "--shards",
                str(args.shards),
                *jobs,
            ]
        )
        for k in range(args.shards)
    ]
    merge = timed(
        [
            "--step",
            "merge",
            "--work",
            str(work),
            "--shards",
            str(args.shards),
            "--out",
            str(args.work / "sharded"),
            *jobs,
        ]
    )
    identical = files(args.work / "single") == files(args.work / "sharded")
    bundle = sum(p.stat().st_size for p in (args.work / "single" / "objects").iterdir())
    result = {
        "when": datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "articles": articles,
        "jobs": args.jobs,
        "shards": args.shards,
        "single_full_s": single,
        "plan_s": plan,
        "shard_s": shards,
        "merge_s": merge,
        "bundle_mb": round(bundle / 1e6, 1),
        "identical": identical,
    }
    print(orjson.dumps(result, option=orjson.OPT_INDENT_2).decode())
    if args.json:
        args.json.write_bytes(orjson.dumps(result, option=orjson.OPT_INDENT_2))
    return 0 if identical else 1


if __name__ == "__main__":
    sys.exit(main())
