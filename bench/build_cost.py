"""A from-scratch build against its floor, side by side on one corpus (docs/benchmarks.md,
"Build throughput against its floor"): wall time, articles per second, and the peak memory
of the whole process tree (summed PSS, sampled every 50 ms) of each.

    python bench/build_cost.py --src DIR [--rounds 1] [--jobs N]

The floor is bench/build_floor.py; the build is scripts/build_bundles.py --full into a
fresh directory. Rounds alternate floor and build, so both see the same machine.
"""

from __future__ import annotations

import argparse
import os
import shutil
import tempfile
from pathlib import Path

import orjson
from publish import PY, run_measured  # a sibling script (bench/publish.py)

ROOT = Path(__file__).resolve().parent.parent


def count_articles(src: Path) -> int:
    total = 0
    for path in src.rglob("*.jsonl"):
        with path.open("rb") as fh:
            total += sum(1 for line in fh if line.strip())
    return total


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--src", type=Path, required=True)
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument("--jobs", type=int, default=None)
    parser.add_argument("--skip-floor", action="store_true")
    parser.add_argument(
        "--sample-every",
        type=float,
        default=0.5,
        help="seconds between readings of the build's memory (each slows it: bench/publish.py)",
    )
    parser.add_argument(
        "--tree", type=Path, default=ROOT, help="the source tree whose builder runs (a before)"
    )
    args = parser.parse_args()
    tree = args.tree.resolve()
    os.environ["PYTHONPATH"] = str(tree)  # its `app`, ahead of the editable install
    src = args.src.resolve()
    articles = count_articles(src)
    jobs = [] if args.jobs is None else ["--jobs", str(args.jobs)]
    for round_ in range(args.rounds):
        result: dict[str, object] = {"round": round_ + 1, "articles": articles, "tree": str(tree)}
        if not args.skip_floor:
            floor_s, _, _ = run_measured(
                [PY, str(ROOT / "bench" / "build_floor.py"), "--src", str(src), *jobs],
                sample=False,
            )
            result["floor_s"] = round(floor_s, 1)
            result["floor_per_s"] = round(articles / floor_s)
        with tempfile.TemporaryDirectory(prefix="build-cost-") as tmp:
            out = Path(tmp) / "bundle"
            build_s, peak, _ = run_measured(
                [
                    PY,
                    str(tree / "scripts" / "build_bundles.py"),
                    "--src",
                    str(src),
                    "--out",
                    str(out),
                    "--full",
                    *jobs,
                ],
                every=args.sample_every,
            )
            result["bundle_mb"] = round(
                sum(p.stat().st_size for p in out.rglob("*") if p.is_file()) / 2**20, 1
            )
            shutil.rmtree(out, ignore_errors=True)
        result["build_s"] = round(build_s, 1)
        result["build_per_s"] = round(articles / build_s)
        result["build_peak_pss_mb"] = round(peak["pss"] / 2**20)
        result["build_peak_largest_rss_mb"] = round(peak["rss"] / 2**20)
        if not args.skip_floor:
            result["build_over_floor"] = round(build_s / floor_s, 2)
        print(orjson.dumps(result).decode(), flush=True)


if __name__ == "__main__":
    main()
