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

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import orjson

BENCH = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCH))
sys.path.insert(1, str(BENCH.parent))  # the app, for the in-process comparison
import gen_corpus  # noqa: E402
import publish  # noqa: E402
import run as harness  # noqa: E402
import sections  # noqa: E402

ROOT = BENCH.parent
PY = str(ROOT / ".venv" / "bin" / "python")
GUNICORN = str(ROOT / ".venv" / "bin" / "gunicorn")
BASELINE = "4afa89d"  # the last commit serving one directory of files per language


def build(code: Path, src: Path, out: Path, *extra: str) -> None:
    # PYTHONPATH: the script's own directory is first on sys.path, not the code's root, and
    # the venv's editable install would otherwise import this checkout's builder.
    subprocess.run(
        [PY, "scripts/build_bundles.py", "--src", str(src), "--out", str(out), *extra],
        cwd=code,
        env={**os.environ, "PYTHONPATH": str(code)},
        check=True,
        stdout=subprocess.DEVNULL,
    )


def serve(
    code: Path, bundle: Path, scratch: Path, server: str = "gunicorn"
) -> tuple[subprocess.Popen[bytes], int]:
    """`code` serving `bundle` with the production gunicorn configuration (2 sync workers),
    or with `server="granian"` the Makefile's GRANIAN_OPTS (2 workers)."""
    port = harness.free_port()
    env = {
        **os.environ,
        "PYTHONPATH": str(code),
        "NEWS_BUNDLE_DIR": str(bundle),
        "NEWS_BIND": f"127.0.0.1:{port}",
        "NEWS_COMMENTS_DSN": f"sqlite:///{scratch / f'c{port}.sqlite3'}",
        "WEB_CONCURRENCY": "2",
        "NEWS_LOG_LEVEL": "warning",
    }
    with (scratch / f"{port}.log").open("wb") as log:
        # From the code's own directory: gunicorn puts its working directory first on sys.path.
        command = [GUNICORN, "-c", "app/gunicorn_conf.py", "app.wsgi:app"]
        if server == "granian":
            command = [
                str(ROOT / ".venv" / "bin" / "granian"),
                *harness.GRANIAN_OPTS,
                *["--no-access-log", "--workers", "2", "--host", "127.0.0.1", "--port", str(port)],
                "app.wsgi:app",
            ]
        proc = subprocess.Popen(
            command,
            cwd=code,
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    try:
        harness.wait_ready(port, proc, "/ready")
    except RuntimeError as exc:  # say why: the server's own last words
        tail = (scratch / f"{port}.log").read_text(errors="replace")[-3000:]
        raise RuntimeError(f"{exc} ({code}):\n{tail}") from None
    return proc, port


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
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--per-language", type=int, default=10_000)
    parser.add_argument("--corpus", type=Path)
    parser.add_argument("--baseline", default=BASELINE)
    parser.add_argument("--publishes", type=int, default=50)
    parser.add_argument("--duration", type=int, default=10)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--json", type=Path)
    parser.add_argument("--docs", action="store_true", help="write docs/benchmarks.md")
    parser.add_argument("--render", type=Path, help="only write the docs from this JSON")
    args = parser.parse_args(argv)
    command = " ".join(["python bench/layouts.py", *(argv if argv is not None else sys.argv[1:])])
    if args.render:
        render(json.loads(args.render.read_text()), command)
        return 0
    scratch = Path(tempfile.mkdtemp(prefix="news-layouts-"))
    corpus = args.corpus or scratch / "corpus"
    if not (corpus / "urls" / "mix.txt").is_file():
        gen_corpus.generate(corpus, args.per_language, 1)
    old_code = scratch / "baseline-code"
    subprocess.run(
        ["git", "worktree", "add", "--detach", str(old_code), args.baseline],
        cwd=ROOT,
        check=True,
        capture_output=True,
    )
    try:
        src = scratch / "src"
        src.mkdir()
        for path in corpus.glob("*.jsonl"):
            os.link(path, src / path.name)
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
                    b"".join(orjson.dumps(r) + b"\n" for r in publish.fresh_articles(100, batch))
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
        opts = SimpleNamespace(connections=32)
        mix = corpus / "urls" / "mix.txt"
        results: dict[str, list[dict[str, Any]]] = {name: [] for name in bundles}
        for round_ in range(args.rounds):
            for name, bundle in bundles.items():
                code = old_code if name == "baseline" else ROOT
                proc, port = serve(code, bundle, scratch)
                try:
                    harness.wrk(port, mix, 3, opts)  # warm up both workers
                    result = harness.wrk(port, mix, args.duration, opts)
                finally:
                    harness.stop(proc)
                results[name].append(result)
                harness.log(
                    f"round {round_ + 1} {name:10s} {result['rps']:9.1f} req/s"
                    f"  p99 {result['p99_ms']:.2f} ms  errors {result['http_errors']}"
                )
        summary = {
            name: {
                "rps_median": round(statistics.median(r["rps"] for r in runs), 1),
                "p99_ms_median": round(statistics.median(r["p99_ms"] for r in runs), 2),
                "rps": [round(r["rps"], 1) for r in runs],
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
            "connections": opts.connections,
            "segments": segments,
            "equivalence": equivalence,
            "summary": summary,
            "when": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        }
        print(json.dumps(figures, indent=2))
        if args.json:
            args.json.write_text(json.dumps(figures, indent=2) + "\n")
        if args.docs:
            render(figures, command)
    finally:
        subprocess.run(["git", "worktree", "remove", "--force", str(old_code)], cwd=ROOT)
        shutil.rmtree(scratch, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
