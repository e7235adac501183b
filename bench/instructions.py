"""Instructions per request, counted by valgrind's callgrind, in process: this tree, another
tree and the minimal Falcon app of bench/profile_app.py, over the bench URL lists.

On a shared machine the time of the same request moves by 20-50% from one second to the
next (docs/benchmarks.md, "Counting instructions"), more than most changes to the request
path. An instruction count does not move: the same code on the same input counts the same
whatever else the machine does. It is not time (a cache miss costs more than an add), so the
figures of record stay bench/profile_app.py's; this tells whether a change added or removed
work, to a fraction of a percent, where the timers cannot.

    python bench/instructions.py --urls CORPUS/urls --bundle DIR \\
        [--before TREE --before-bundle DIR] [--endpoints get,latest,list] [--requests 5000]

Each figure is (instructions of a run of N requests - those of a run of none) / N, each run a
fresh process after the same warm-up (the first 200 URLs once), with a fixed hash seed and
the tree byte-compiled beforehand. What the background threads do on a clock, which valgrind
slows about fifty-fold, is kept out of both runs: the bundle watcher looks once an hour, and
the metrics are flushed once at the end of the run, so the tally of every request is counted
once. Answer caches are off (NEWS_RESPONSE_CACHE_BYTES=0) unless --cache-bytes says
otherwise. Two runs go at once: the counts do not depend on the load.

The requests themselves count the same from run to run (within 0.3%); the start-up does not
quite (two runs of it differed by about 4 million instructions: the bundle's loading and the
imports), and that difference is shared out over the N requests: about 4,000 a request at
N = 1,000, 800 at the default 5,000. The minimal app counts the same to the instruction.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
MINIMAL = "minimal"
WARM = 200


def child(tree: str, endpoint: str, urls_dir: Path, n: int) -> None:
    """One counted run: warm up, then `n` requests of `endpoint`'s list, then one flush."""
    sys.path.insert(0, str(HERE))
    import profile_app

    if tree == MINIMAL:
        app = profile_app.minimal_app()
        metrics = None
    else:
        sys.path.insert(0, tree)
        from app import metrics as metrics_module

        metrics_module.Metrics.FLUSH_SECONDS = 1e9  # flushed below, once
        from app.wsgi import create_app

        app = create_app()
        metrics = next(
            m for m in app._unprepared_middleware if isinstance(m, metrics_module.Metrics)
        )
    urls = (urls_dir / f"{endpoint}.txt").read_text().split()

    def start_response(*_args: object) -> None:
        pass

    for url in urls[:WARM]:
        for _ in app(profile_app.environ(url), start_response):
            pass
    for i in range(n):
        for _ in app(profile_app.environ(urls[i % len(urls)]), start_response):
            pass
    if metrics is not None:
        metrics.flush()


def count(tree: str, bundle: Path | None, endpoint: str, urls: Path, n: int, cache: int) -> int:
    """Instructions of one child run under callgrind."""
    env = {
        **os.environ,
        "PYTHONHASHSEED": "0",
        "NEWS_RESPONSE_CACHE_BYTES": str(cache),
        "NEWS_BUNDLE_CHECK_INTERVAL": "3600",
    }
    if bundle is not None:
        env["NEWS_BUNDLE_DIR"] = str(bundle)
    command = [
        "valgrind",
        "--tool=callgrind",
        "--callgrind-out-file=/dev/null",
        sys.executable,
        str(Path(__file__).resolve()),
        "--child",
        tree,
        "--endpoint",
        endpoint,
        "--urls",
        str(urls),
        "--requests",
        str(n),
    ]
    done = subprocess.run(command, env=env, capture_output=True, text=True, check=True)
    found = re.search(r"Collected : (\d+)", done.stderr)
    if found is None:
        raise RuntimeError(f"no count from callgrind:\n{done.stderr[-2000:]}")
    return int(found.group(1))


def compile_tree(tree: str) -> None:
    """Byte-compile a tree before its first count: two runs that raced to write the same
    .pyc would each do different start-up work, and the difference of their counts would
    show it."""
    for part in ("app", "bench"):
        subprocess.run(
            [sys.executable, "-m", "compileall", "-q", str(Path(tree) / part)], check=True
        )


def per_request(
    tree: str, bundle: Path | None, endpoint: str, urls: Path, n: int, cache: int
) -> float:
    with ThreadPoolExecutor(2) as pool:
        runs = [pool.submit(count, tree, bundle, endpoint, urls, k, cache) for k in (0, n)]
        idle, busy = (run.result() for run in runs)
    return (busy - idle) / n


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--urls", type=Path, required=True, help="a bench corpus's urls/")
    parser.add_argument("--bundle", type=Path, help="this tree's bundle")
    parser.add_argument("--before", help="another source tree to count beside this one")
    parser.add_argument("--before-bundle", type=Path, help="its bundle (default: --bundle)")
    parser.add_argument("--endpoints", default="get,latest,categories,list,search,mix")
    parser.add_argument("--requests", type=int, default=5000, help="per counted run")
    parser.add_argument("--cache-bytes", type=int, default=0, help="NEWS_RESPONSE_CACHE_BYTES")
    parser.add_argument("--json", type=Path, help="also write the figures here")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    parser.add_argument("--endpoint", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(args.child, args.endpoint, args.urls, args.requests)
        return 0
    if args.bundle is None:
        parser.error("--bundle is required")
    trees = {MINIMAL: (MINIMAL, None)}
    if args.before:
        trees["before"] = (str(Path(args.before).resolve()), args.before_bundle or args.bundle)
    trees["after"] = (str(ROOT), args.bundle)
    for tree, _ in trees.values():
        if tree != MINIMAL:
            compile_tree(tree)
    results: dict[str, dict[str, float]] = {}
    print("endpoint    " + "".join(f"{name:>12s}" for name in trees) + "  after/minimal", end="")
    print("  after/before" if args.before else "")
    for endpoint in args.endpoints.split(","):
        row = {
            name: per_request(tree, bundle, endpoint, args.urls, args.requests, args.cache_bytes)
            for name, (tree, bundle) in trees.items()
        }
        results[endpoint] = row
        line = f"{endpoint:12s}" + "".join(f"{row[name]:12.0f}" for name in trees)
        line += f"  {row['after'] / row[MINIMAL]:13.3f}"
        if args.before:
            line += f"  {row['after'] / row['before']:12.4f}"
        print(line, flush=True)
    if args.json:
        args.json.write_text(json.dumps(results, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
