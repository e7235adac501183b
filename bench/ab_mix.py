"""A/B of the mixed read load: this tree against another (e.g. `git archive main`), same bundle.

bench/run.py measures one code base per run, minutes apart; on a shared machine the load of
others moves its figures more than a small change does. This starts both code bases at once
under the production gunicorn configuration (sync workers, as bench/run.py), on the benchmark's
corpus and bundle, and alternates wrk runs of the mix (A B B A ...), so both see the same
machine. It reports requests/s and the workers' CPU per request (the steadier figure) per
round, and the ratio of the medians.

    flock /tmp/bench.lock .venv/bin/python bench/ab_mix.py --before /tmp/main-tree [--rounds 6]

The other tree runs with this tree's virtualenv; run `python bench/run.py` once first, so the
corpus and bundle are in bench/.cache.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

import run  # bench/run.py: the harness's servers, wrk and URL lists

WARMUP_SECONDS = 3


def serve(
    tree: Path, bundle: Path, scratch: Path, name: str
) -> tuple[int, subprocess.Popen[bytes]]:
    port = run.free_port()
    env = dict(
        os.environ,
        PYTHONPATH=str(tree),
        NEWS_BUNDLE_DIR=str(bundle),
        NEWS_COMMENTS_DSN=f"sqlite:///{scratch / f'{name}.sqlite3'}",
        NEWS_BIND=f"127.0.0.1:{port}",
        WEB_CONCURRENCY=str(run.WORKERS),
        NEWS_WORKER_CLASS="sync",
        NEWS_LOG_LEVEL="warning",
    )
    cmd = [str(run.VENV_BIN / "gunicorn"), "-c", str(tree / "app/gunicorn_conf.py"), "app.wsgi:app"]
    proc = subprocess.Popen(
        cmd,
        cwd=tree,
        env=env,
        stdout=(scratch / f"{name}.log").open("wb"),
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    run.wait_ready(port, proc)
    return port, proc


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--before", type=Path, required=True, help="the other source tree")
    parser.add_argument("--rounds", type=int, default=6)
    parser.add_argument("--duration", type=int, default=10, help="seconds per wrk run")
    parser.add_argument("--per-language", type=int, default=10_000)
    args = parser.parse_args()
    opts = run.Options(
        args.per_language, 1, args.duration, WARMUP_SECONDS, 32, 1000, 4, False, (), False, False
    )
    src, _ = run.corpus(opts)
    bundle = run.CACHE / f"bundle-{src.name.removeprefix('corpus-')}"
    if not (bundle / "manifest.json").exists():
        parser.error(f"no bundle at {bundle}: run bench/run.py first")
    mix = run.url_files(src)["mix"]
    trees = {"before": args.before.resolve(), "after": run.ROOT}
    results: dict[str, list[dict[str, float]]] = {name: [] for name in trees}
    with tempfile.TemporaryDirectory(prefix="news-ab-") as tmp:
        servers = {name: serve(tree, bundle, Path(tmp), name) for name, tree in trees.items()}
        try:
            for port, _ in servers.values():
                run.wrk(port, mix, WARMUP_SECONDS, opts)
            for r in range(args.rounds):
                order = ["before", "after"] if r % 2 == 0 else ["after", "before"]
                for name in order:
                    port, proc = servers[name]
                    pids = run.workers_of(proc)
                    out = run.wrk(port, mix, args.duration, opts, cpu_pids=pids)
                    row = {"rps": out["rps"], "cpu_us": out["server_cpu_us_per_req"]}
                    results[name].append(row)
                    run.log(f"round {r + 1} {name:6s} {row['rps']:8.1f} req/s {row['cpu_us']} µs")
        finally:
            for _, proc in servers.values():
                run.stop(proc)
    summary = {
        name: {
            "rps_median": statistics.median(row["rps"] for row in rows),
            "cpu_us_median": statistics.median(row["cpu_us"] for row in rows),
            "rounds": rows,
        }
        for name, rows in results.items()
    }
    summary["ratio"] = {
        "rps_after_over_before": round(
            summary["after"]["rps_median"] / summary["before"]["rps_median"], 3
        ),
        "cpu_after_over_before": round(
            summary["after"]["cpu_us_median"] / summary["before"]["cpu_us_median"], 3
        ),
    }
    print(json.dumps(summary, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
