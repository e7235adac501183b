"""The costs of a sharded from-scratch build (docs/publishing.md, "Building on many machines"):
a single `--full` build, then the plan, each of N shards one after the other (each as one
machine of this size would run it, with every core), and the merge; checks that both give the
same bundle byte for byte. Run it under `flock /tmp/bench.lock` on a shared machine.

    python bench/sharded_build.py --corpus DIR --work DIR --shards 4 --json FILE
    python bench/sharded_build.py --model SMALL.json LARGE.json   # the cost model

The model fits each step's time as a fixed cost plus a cost per article through the two
measured sizes, and deals the units of a 10-million-article archive (9 languages alike) to
1, 10 and 50 shards with the builder's own deal (app.builder.shards.deal) for the slowest
shard's share: rebuild = plan + slowest shard + merge.
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


def fit(small: tuple[float, float], large: tuple[float, float]) -> tuple[float, float]:
    """(fixed seconds, seconds per article) through two (articles, seconds) points."""
    (a1, t1), (a2, t2) = small, large
    per = (t2 - t1) / (a2 - a1)
    return t1 - per * a1, per


def slowest_share(articles: int, machines: int) -> float:
    """The slowest shard's share of the compile cost of `articles` split evenly over the nine
    languages, dealt to `machines` shards as the builder deals them."""
    from app.builder import shards
    from app.languages import LANGUAGES

    plan = shards.Plan(Path("."), shards.Scan(), {}, {}, {}, None)  # type: ignore[arg-type]
    plan.order = {language: range(articles // len(LANGUAGES)) for language in LANGUAGES}  # type: ignore[misc]
    units = plan.units()
    dealt = shards.deal(units, machines)
    return max(sum(u.cost for u in shard) for shard in dealt) / sum(u.cost for u in units)


def model(small: dict, large: dict, target: int = 10_000_000) -> list[dict]:
    points = [(r["articles"], r) for r in (small, large)]
    (a1, r1), (a2, r2) = points
    plan = fit((a1, r1["plan_s"]), (a2, r2["plan_s"]))
    merge = fit((a1, r1["merge_s"]), (a2, r2["merge_s"]))
    single = fit((a1, r1["single_full_s"]), (a2, r2["single_full_s"]))
    # Summed shard time = shards x a shard's fixed cost + per-article cost x articles.
    n1, n2 = len(r1["shard_s"]), len(r2["shard_s"])
    s1, s2 = sum(r1["shard_s"]), sum(r2["shard_s"])
    per = (s2 - s1 * n2 / n1) / (a2 - a1 * n2 / n1)
    fixed = (s1 - per * a1) / n1
    rows = []
    for machines in (1, 10, 50):
        shard = fixed + per * target * slowest_share(target, machines)
        p, m = plan[0] + plan[1] * target, merge[0] + merge[1] * target
        rows.append(
            {
                "machines": machines,
                "plan_s": round(p),
                "slowest_shard_s": round(shard),
                "merge_s": round(m),
                "total_s": round(p + shard + m),
                "single_build_s": round(single[0] + single[1] * target) if machines == 1 else None,
            }
        )
    return rows


def docs(small: dict, large: dict, rows: list[dict], quiet: float) -> str:
    """The section of docs/benchmarks.md."""
    out = [
        "## Sharded from-scratch builds",
        "",
        "How the build splits: [publishing.md](publishing.md#building-on-many-machines). "
        "Measured on this machine (2 cores) with the generated corpus "
        "(`bench/gen_corpus.py --out DIR --per-language N`), each shard run alone with both "
        "cores, as one machine of this size would run it:",
        "",
        "```sh",
        "flock /tmp/bench.lock python bench/sharded_build.py --corpus DIR --work WORK "
        "--shards 4 --json bench/results/sharded-N.json",
        "python bench/sharded_build.py --model bench/results/sharded-2000.json "
        "bench/results/sharded-20000.json --docs",
        "```",
        "",
        "| articles | single `--full` | plan | 4 shards, each | merge | same bundle |",
        "|---:|---:|---:|---:|---:|---|",
    ]
    for r in (small, large):
        shards = ", ".join(f"{t:.1f}" for t in r["shard_s"])
        out.append(
            f"| {r['articles']:,} | {r['single_full_s']:.1f} s | {r['plan_s']:.1f} s | "
            f"{shards} s | {r['merge_s']:.1f} s | {'yes' if r['identical'] else '**no**'} |"
        )
    out += [
        "",
        "A rebuild of 10,000,000 articles (9 languages alike), each step a fixed cost plus a "
        "cost per article fitted through the two sizes; the slowest shard's share from the "
        "builder's own deal of that archive's units (`app.builder.shards.deal`). The last column "
        f"scales the total by {quiet:.2f}, the quiet machine's full build "
        "(Publishing at 9 x 100,000: 500 s) over the same build extrapolated from this run:",
        "",
        "| machines | plan | slowest shard | merge | total, as measured | total, quiet machine |",
        "|---:|---:|---:|---:|---:|---:|",
    ]
    for row in rows:
        out.append(
            f"| {row['machines']} | {row['plan_s']:,} s | {row['slowest_shard_s']:,} s | "
            f"{row['merge_s']:,} s | {row['total_s']:,} s ({row['total_s'] / 3600:.1f} h) | "
            f"{row['total_s'] * quiet / 3600:.1f} h |"
        )
    return "\n".join(out) + "\n"


def main() -> int:
    if sys.argv[1:2] == ["--model"]:
        small, large = (orjson.loads(Path(p).read_bytes()) for p in sys.argv[2:4])
        rows = model(small, large)
        for row in rows:
            print(orjson.dumps(row).decode())
        # The quiet full build: 500 s for 900,000 articles (docs/benchmarks.md, Publishing).
        single = fit(
            (small["articles"], small["single_full_s"]), (large["articles"], large["single_full_s"])
        )
        quiet = 500 / (single[0] + single[1] * 900_000)
        text = docs(small, large, rows, quiet)
        print(text)
        if "--docs" in sys.argv:
            from sections import write

            write("sharded-builds", text)
        return 0
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
