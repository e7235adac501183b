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

import json
import statistics
import sys
import tempfile
from pathlib import Path

import harness

WARMUP_SECONDS = 3


def main() -> int:
    parser = harness.cli.parser(__doc__)
    parser.add_argument("--before", type=Path, required=True, help="the other source tree")
    harness.cli.add_rounds(parser, duration=10, rounds=6)
    parser.add_argument("--per-language", type=int, default=10_000)
    args = parser.parse_args()
    src, _ = harness.corpus(args.per_language)
    bundle = harness.cached_bundle(src)
    if not (bundle / "manifest.json").exists():
        parser.error(f"no bundle at {bundle}: run bench/run.py first")
    mix = harness.url_files(src)["mix"]
    trees = {"before": args.before.resolve(), "after": harness.ROOT}
    results: dict[str, list[dict[str, float]]] = {name: [] for name in trees}
    with tempfile.TemporaryDirectory(prefix="news-ab-") as tmp:
        servers = {name: harness.serve(tree, bundle, Path(tmp)) for name, tree in trees.items()}
        try:
            for _, port in servers.values():
                harness.wrk(port, mix, WARMUP_SECONDS)
            for r in range(args.rounds):
                order = ["before", "after"] if r % 2 == 0 else ["after", "before"]
                for name in order:
                    proc, port = servers[name]
                    pids = harness.workers_of(proc)
                    out = harness.wrk(port, mix, args.duration, cpu_pids=pids)
                    row = {"rps": out["rps"], "cpu_us": out["server_cpu_us_per_req"]}
                    results[name].append(row)
                    harness.log(
                        f"round {r + 1} {name:6s} {row['rps']:8.1f} req/s {row['cpu_us']} µs"
                    )
        finally:
            for proc, _ in servers.values():
                harness.stop(proc)
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
