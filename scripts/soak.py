#!/usr/bin/env python3
"""Sustained mixed load against a real gunicorn (tests/reliability/load.py): `make soak`.

Reads of every kind plus a share of comment writes for --seconds (default 300); prints
requests, errors, and RSS / open fds / connections of the master and each worker at start
and end. Exit status 0 when there was no error and nothing grew beyond its bound.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tests.reliability.harness import Server, build_sample_bundle
from tests.reliability.load import growth_problems, run_load


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=300.0)
    parser.add_argument("--threads", type=int, default=8, help="client threads")
    parser.add_argument("--write-share", type=float, default=0.05)
    parser.add_argument("--workers", type=int, default=2, help="gunicorn workers")
    parser.add_argument("--worker-class", default="sync", choices=["sync", "gthread"])
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="news-soak-") as tmp:
        bundle = Path(tmp) / "bundle"
        build_sample_bundle(bundle)
        server = Server(
            Path(tmp) / "server",
            bundle,
            workers=args.workers,
            worker_class=args.worker_class,
            env={"NEWS_ACCESS_LOG": ""},  # minutes of access log are not the point here
        )
        with server:
            result = run_load(
                server, args.seconds, threads=args.threads, write_share=args.write_share
            )
            traceback = "Traceback" in server.log_text()
    print(json.dumps(result.as_dict(), indent=1))
    problems = growth_problems(result)
    if traceback:
        problems.append("the server log holds a traceback")
    print(
        f"soak: {result.requests} requests ({result.writes} comment writes) in "
        f"{result.seconds:.0f} s, {result.error_count} errors"
        + ("".join(f"\n  problem: {p}" for p in problems) or "; no growth beyond bounds")
    )
    return 0 if result.error_count == 0 and not problems else 1


if __name__ == "__main__":
    sys.exit(main())
