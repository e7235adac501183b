"""Serving cost of the segmented bundle layout against the layout it replaced, in one run.

    python bench/layouts.py [--per-language 10000] [--baseline REV] [--publishes 50]

Serves the same corpus four ways under the production gunicorn configuration (2 sync workers)
and runs the same wrk mixed load against each, alternating rounds so drift hits all alike:

* ``baseline``: the code and bundle layout of git revision REV (default: the last commit
  before segmented bundles), checked out in a temporary worktree with its own builder;
* ``full``: this code, a from-scratch build (one segment per language);
* ``publishes``: this code after PUBLISHES incremental publishes of 100 articles each, with
  the default merge policy;
* ``no-merge``: the same publishes built with ``--no-merge`` (a segment per publish).

Prints and writes (``--json``) throughput and p99 of every round.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import orjson

BENCH = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCH))
sys.path.insert(1, str(BENCH.parent))  # the app, for the in-process comparison
import harness  # noqa: E402
import publish  # noqa: E402
import sections  # noqa: E402
from harness import ROOT, build, serve  # noqa: E402  (features.py uses layouts.serve)

BASELINE = "4afa89d"  # the last commit serving one directory of files per language


def compare(bundle: Path, reference: Path, urls: Path, scratch: Path) -> dict[str, int]:
    """Every URL of the benchmark lists, in-process against both bundles: how many answered
    with the same status, body and ETag, and how many did not."""
    from falcon.testing import TestClient

    from app.config import Settings
    from app.wsgi import create_app

    def client(path: Path) -> TestClient:
        dsn = f"sqlite:///{scratch / (path.name + '-compare.sqlite3')}"
        return TestClient(create_app(Settings(bundle_dir=path, comments_dsn=dsn)))

    one, two = client(bundle), client(reference)
    same = different = 0
    for name in ("list", "latest", "get", "search", "categories", "mix"):
        for url in (urls / f"{name}.txt").read_text().split():
            path, _, query = url.partition("?")
            a, b = (
                one.simulate_get(path, query_string=query),
                two.simulate_get(path, query_string=query),
            )
            key_a = (a.status_code, a.content, a.headers.get("etag"))
            key_b = (b.status_code, b.content, b.headers.get("etag"))
            if key_a == key_b:
                same += 1
            else:
                different += 1
    return {"same": same, "different": different}


def render(f: dict[str, Any], command: str) -> None:
    labels = {
        "baseline": f"previous layout (`{f['baseline']}`)",
        "full": "segmented, from-scratch build",
        "publishes": f"after {f['publishes']} publishes of 100 (default merges)",
        "no-merge": f"after {f['publishes']} publishes of 100, `--no-merge`",
    }
    lines = [
        f"## Serving: segmented layout against the previous one (9 x {f['per_language']:,})",
        "",
        f"`{command}`: the same wrk mix (`-c{f['connections']}`, {f['duration_s']} s a round, "
        "rounds alternated) against gunicorn (2 sync workers) serving each bundle. "
        "Target: throughput and p99 within 10% of the previous layout.",
        "",
        "| bundle | segments per language | req/s (median) | vs previous | p99 ms (median) "
        "| vs previous | rounds (req/s) |",
        "|---|---|---|---|---|---|---|",
    ]
    for name, row in f["summary"].items():
        segs = f["segments"].get(name)
        seg_text = "one directory" if segs is None else f"{min(segs.values())}-{max(segs.values())}"
        rounds = ", ".join(f"{x:.0f}" for x in row["rps"])
        lines.append(
            f"| {labels[name]} | {seg_text} | {row['rps_median']:.0f} "
            f"| {row['rps_vs_baseline']:.3f} | {row['p99_ms_median']:.2f} "
            f"| {row['p99_vs_baseline']:.3f} | {rounds} |"
        )
    eq = f["equivalence"]
    lines += [
        "",
        "The benchmark URL lists answered identically (status, body, ETag) from the incremental "
        "builds and from a from-scratch build of the same sources: "
        + "; ".join(
            f"{name}: {v['same']} same, {v['different']} different" for name, v in eq.items()
        )
        + ".",
        "",
    ]
    sections.write("layouts", "\n".join(lines))


def main(argv: list[str] | None = None) -> int:
    parser = harness.cli.parser(__doc__)
    harness.cli.add_corpus(parser, per_language=10_000)
    parser.add_argument("--baseline", default=BASELINE)
    parser.add_argument("--publishes", type=int, default=50)
    harness.cli.add_rounds(parser, duration=10, rounds=3)
    harness.cli.add_outputs(parser)
    args = parser.parse_args(argv)
    command = harness.cli.invocation("layouts.py", argv)
    if args.render:
        render(json.loads(args.render.read_text()), command)
        return 0
    scratch = Path(tempfile.mkdtemp(prefix="news-layouts-"))
    corpus = harness.generated(args.corpus, args.per_language, scratch)
    try:
        with harness.checkout(args.baseline, scratch / "baseline-code") as old_code:
            src = harness.sources(corpus, scratch / "src")
            bundles = {
                name: scratch / "bundles" / name
                for name in ("baseline", "full", "publishes", "no-merge")
            }
            build(old_code, src, bundles["baseline"])
            build(ROOT, src, bundles["full"], "--full")
            for name, extra in (("publishes", ()), ("no-merge", ("--no-merge",))):
                shutil.copytree(bundles["full"], bundles[name])
                pub = scratch / f"src-{name}"
                shutil.copytree(src, pub, copy_function=os.link)
                for batch in range(args.publishes):
                    (pub / f"publish-{batch}.jsonl").write_bytes(
                        b"".join(
                            orjson.dumps(r) + b"\n" for r in publish.fresh_articles(100, batch)
                        )
                    )
                    build(ROOT, pub, bundles[name], *extra)
            # The benchmark URL lists, served from the incremental build and from a from-scratch
            # build of the same sources, must answer identically.
            reference = scratch / "reference"
            build(ROOT, scratch / "src-publishes", reference, "--full")
            equivalence = {
                name: compare(bundles[name], reference, corpus / "urls", scratch)
                for name in ("publishes", "no-merge")
            }
            harness.log(f"equivalence with a full build: {equivalence}")
            segments = {
                name: {
                    lang: len(meta["segments"])
                    for lang, meta in json.loads((path / "manifest.json").read_bytes())[
                        "languages"
                    ].items()
                }
                for name, path in bundles.items()
                if name != "baseline"
            }
            mix = corpus / "urls" / "mix.txt"
            results: dict[str, list[dict[str, Any]]] = {name: [] for name in bundles}
            for round_ in range(args.rounds):
                for name, bundle in bundles.items():
                    code = old_code if name == "baseline" else ROOT
                    proc, port = serve(code, bundle, scratch)
                    try:
                        harness.wrk(port, mix, 3)  # warm up both workers
                        result = harness.wrk(port, mix, args.duration)
                    finally:
                        harness.stop(proc)
                    results[name].append(result)
                    harness.log(
                        f"round {round_ + 1} {name:10s} {result['rps']:9.1f} req/s"
                        f"  p99 {result['p99_ms']:.2f} ms  errors {result['http_errors']}"
                    )
            summary = {
                name: {
                    **harness.medians(runs),
                    "p99_ms": [r["p99_ms"] for r in runs],
                    "errors": sum(r["http_errors"] for r in runs),
                }
                for name, runs in results.items()
            }
            base = summary["baseline"]
            for row in summary.values():
                row["rps_vs_baseline"] = round(row["rps_median"] / base["rps_median"], 3)
                row["p99_vs_baseline"] = round(row["p99_ms_median"] / base["p99_ms_median"], 3)
            figures = {
                "per_language": args.per_language,
                "publishes": args.publishes,
                "baseline": args.baseline,
                "duration_s": args.duration,
                "connections": 32,
                "segments": segments,
                "equivalence": equivalence,
                "summary": summary,
                "when": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            }
            harness.cli.emit(figures, args, render, command)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
