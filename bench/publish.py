"""Publishing benchmark: full build, publish, retract and switch costs at archive scale.

    python bench/publish.py --per-language 100000 [--corpus DIR] [--work DIR] [--json OUT]
    python bench/publish.py --per-language 100000 --work DIR --reuse [--json OUT]

Measures, on this machine, with the real commands (docs/publishing.md):

* a from-scratch build: wall time, peak RSS (summed over the builder's process tree,
  sampled every 20 ms), bundle size against source size;
* server start-up (gunicorn, warm page cache): process start to the first 200 from /ready;
* publishing 100 new articles end to end: the incremental build, install_bundle.py into the
  served directory, and until the running server answers with the new bundle; bytes shipped;
* retracting one article end to end, the same way, until the article answers 404;
* the switch under load: `wrk -c8` on `latest` during a publish against the same run in a
  steady state (p50, p99, max).

The corpus comes from bench/gen_corpus.py (generated when missing; never committed).
`--reuse` keeps the built and served bundles an earlier run left in WORK and measures all
but the full build, for a change that keeps the bundle format (a build of another format
starts from scratch, and is refused here).
"""

from __future__ import annotations

import contextlib
import functools
import http.client
import json
import os
import random
import re
import shutil
import subprocess
import sys
import threading
import time
from datetime import timedelta
from pathlib import Path
from typing import Any

import orjson

ROOT = Path(__file__).resolve().parent.parent
BENCH = ROOT / "bench"
PY = str(ROOT / ".venv" / "bin" / "python")
sys.path.insert(0, str(BENCH))
import gen_corpus  # noqa: E402  (a sibling script, not a package)
import harness  # noqa: E402
import sections  # noqa: E402


def tree_memory(pid: int) -> tuple[int, int]:
    """(largest RSS of one process, summed PSS) of a process and all its descendants, in
    bytes. PSS splits pages shared after fork between the processes sharing them, so the sum
    is the memory the build really holds; summed RSS would count shared pages repeatedly."""
    largest, pss = 0, 0
    for p in (pid, *harness.descendants(pid)):
        with contextlib.suppress(OSError, ValueError):
            for line in Path(f"/proc/{p}/smaps_rollup").read_text().splitlines():
                if line.startswith("Rss:"):
                    largest = max(largest, int(line.split()[1]) * 1024)
                elif line.startswith("Pss:"):
                    pss += int(line.split()[1]) * 1024
    return largest, pss


def run_measured(
    cmd: list[str], sample: bool = True, every: float = 0.05
) -> tuple[float, dict[str, int], str]:
    """(seconds, peak memory {"rss": largest process, "pss": whole tree}, stdout) of a
    command, its memory read every `every` seconds; fails loudly. A forkserver started by
    the command is one of its descendants.

    A reading is not free: smaps_rollup walks each process's page tables under its memory
    lock, and read every 50 ms it made a 9 x 20,000 full build 11% slower (153 -> 171 s;
    docs/benchmarks.md, "Build throughput against its floor")."""
    started = time.perf_counter()
    proc = subprocess.Popen(
        cmd, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    peak = {"rss": 0, "pss": 0}
    while proc.poll() is None:
        if sample:
            rss, pss = tree_memory(proc.pid)
            peak = {"rss": max(peak["rss"], rss), "pss": max(peak["pss"], pss)}
        time.sleep(every)
    out, err = proc.communicate()
    elapsed = time.perf_counter() - started
    if proc.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} failed:\n{err}")
    return elapsed, peak, out


def size_of(path: Path, pattern: str = "*") -> int:
    return sum(p.stat().st_size for p in path.rglob(pattern) if p.is_file())


def bundle_size(bundle: Path) -> int:
    return (bundle / "manifest.json").stat().st_size + size_of(bundle / "objects")


def get(port: int, path: str) -> tuple[int, bytes]:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    try:
        conn.request("GET", path)
        resp = conn.getresponse()
        return resp.status, resp.read()
    finally:
        conn.close()


def wait_for(check: Any, timeout: float = 120.0, every: float = 0.005) -> float:
    started = time.perf_counter()
    while time.perf_counter() - started < timeout:
        with contextlib.suppress(OSError):
            if check():
                return time.perf_counter() - started
        time.sleep(every)
    raise RuntimeError("timed out")


@functools.cache
def _vocab(lang: str) -> Any:
    return gen_corpus.vocab_for(lang)  # slow to make: once per language and process


def fresh_articles(count: int, batch: int, seed: int = 7) -> list[dict[str, Any]]:
    """`count` new articles spread over the nine languages, newer than the whole corpus."""
    rng = random.Random(f"publish-{seed}-{batch}")
    out = []
    for i in range(count):
        lang = gen_corpus.LANGUAGES[i % len(gen_corpus.LANGUAGES)]
        v = _vocab(lang)
        record = gen_corpus.article(
            rng, lang, v, i, f"{lang}-pub{batch}-{i}", gen_corpus.categories_for(lang, 1)
        )
        when = gen_corpus.YEAR_START + timedelta(days=366, minutes=batch * 200 + i)
        record["published_at"] = when.strftime("%Y-%m-%dT%H:%M:%SZ")
        record.pop("updated_at", None)
        out.append(record)
    return out


def write_batch(src: Path, batch: int) -> None:
    """Publish batch `batch`: 100 fresh articles in `src/publish-<batch>.jsonl`."""
    lines = b"".join(orjson.dumps(r) + b"\n" for r in fresh_articles(100, batch))
    (src / f"publish-{batch}.jsonl").write_bytes(lines)


def wrk(port: int, urls: Path, seconds: int) -> dict[str, Any]:
    """`wrk -t2 -c8` over `urls`: the latency figures of a publish under load."""
    result = harness.wrk(port, urls, seconds, 8, threads=2)
    errors = result["socket_errors"]
    return {
        "rps": result["rps"],
        "p50_ms": result["p50_ms"],
        "p99_ms": result["p99_ms"],
        "max_ms": result["max_ms"],
        "non_2xx": result["http_errors"],
        # As wrk's own summary says it: "connect 0, read 1, write 0, timeout 0", or nothing.
        "socket_errors": ", ".join(f"{k} {v}" for k, v in errors.items())
        if any(errors.values())
        else "",
    }


def prepare(work: Path, per_language: int, corpus: Path | None) -> tuple[Path, Path, Path]:
    """The corpus (generated on first use) hard-linked into work/src; work/built and
    work/served emptied. Returns (src, built, served)."""
    corpus = corpus or work / f"corpus-{per_language}"
    if not (corpus / "ko.jsonl").is_file():
        print(f"generating {per_language} articles per language in {corpus}", file=sys.stderr)
        size = str(per_language)
        generate = [PY, str(BENCH / "gen_corpus.py"), "--out", str(corpus), "--per-language", size]
        subprocess.run(generate, check=True)
    src, built, served = work / "src", work / "built", work / "served"
    for path in (src, built, served):
        shutil.rmtree(path, ignore_errors=True)
    src.mkdir(parents=True)
    for path in corpus.glob("*.jsonl"):
        os.link(path, src / path.name)  # the same bytes, no copy
    return src, built, served


def full_build(src: Path, built: Path, served: Path) -> dict[str, Any]:
    """Build src from scratch into built (timed, peak memory sampled), install it into
    served; the figures of the build."""
    source_bytes = size_of(src, "*.jsonl")
    seconds, peak, out = run_measured(
        [PY, "scripts/build_bundles.py", "--src", str(src), "--out", str(built), "--full"]
    )
    figures = {
        "seconds": round(seconds, 1),
        "peak_largest_rss_mb": round(peak["rss"] / 2**20),
        "peak_total_pss_mb": round(peak["pss"] / 2**20),
        "source_mb": round(source_bytes / 2**20),
        "bundle_mb": round(bundle_size(built) / 2**20),
        "bundle_to_source": round(bundle_size(built) / source_bytes, 2),
        "output": out.strip(),
    }
    print(json.dumps(figures), file=sys.stderr)
    subprocess.run([PY, "scripts/install_bundle.py", str(built), str(served)], check=True, cwd=ROOT)
    return figures


def start_server(served: Path, work: Path, port: int) -> subprocess.Popen[bytes]:
    """gunicorn (the production config, 2 workers) serving `served` on 127.0.0.1:port."""
    env = harness.environment(served, port, work / "comments.sqlite3")
    return harness.start(harness.server_command("gunicorn", port), env, work / "server.log")


def main(argv: list[str] | None = None) -> int:
    parser = harness.cli.parser(__doc__)
    harness.cli.add_corpus(parser, per_language=100_000)
    parser.add_argument("--work", type=Path, default=Path("/tmp/news-bench-publish"))
    parser.add_argument("--load-seconds", type=int, default=10)
    parser.add_argument(
        "--reuse", action="store_true", help="keep WORK's bundles of an earlier run: no full build"
    )
    harness.cli.add_outputs(parser)
    args = parser.parse_args(argv)
    if args.render:
        render(json.loads(args.render.read_text()), harness.cli.invocation("publish.py", argv))
        return 0
    work: Path = args.work
    figures: dict[str, Any] = {"per_language": args.per_language, "machine_cpus": os.cpu_count()}
    if args.reuse:
        src, built, served = work / "src", work / "built", work / "served"
        if not ((built / "manifest.json").is_file() and (served / "manifest.json").is_file()):
            parser.error(f"--reuse: {work} holds no built and served bundle of an earlier run")
        figures["full_build"] = None
    else:
        src, built, served = prepare(work, args.per_language, args.corpus)
        figures["full_build"] = full_build(src, built, served)
    # Publish batches after those already in src (a reused run's), so each one is new.
    first = 1 + max((int(p.stem.split("-")[1]) for p in src.glob("publish-*.jsonl")), default=-1)

    port = 18123
    for _ in range(2):  # the second start has a warm page cache
        started = time.perf_counter()
        server = start_server(served, work, port)
        harness.wait_ready(port, server, "/ready", timeout=120)
        startup = time.perf_counter() - started
        if _ == 0:
            harness.stop(server)
    figures["startup_seconds_warm"] = round(startup, 2)
    try:
        latest_urls = work / "latest.txt"
        latest_urls.write_text(
            "\n".join(f"/api/v1/{lang}/articles/latest?limit=10" for lang in gen_corpus.LANGUAGES)
            + "\n"
        )

        def ready_id() -> str:
            return orjson.loads(get(port, "/ready")[1])["bundle"]

        def publish(batch: int) -> dict[str, Any]:
            write_batch(src, batch)
            started = time.perf_counter()
            b_seconds, b_peak, b_out = run_measured(
                [PY, "scripts/build_bundles.py", "--src", str(src), "--out", str(built)]
            )
            i_seconds, _, i_out = run_measured(
                [PY, "scripts/install_bundle.py", str(built), str(served)], sample=False
            )
            new_id = json.loads((built / "manifest.json").read_bytes())["bundle_id"]
            if "(incremental" not in b_out:
                raise RuntimeError(f"the publish was not incremental:\n{b_out}")
            wait_for(lambda: all(ready_id() == new_id for _ in range(10)))
            shipped = int(re.search(r"objects, (\d+) bytes", i_out).group(1))  # type: ignore[union-attr]
            return {
                "end_to_end_seconds": round(time.perf_counter() - started, 2),
                "build_seconds": round(b_seconds, 2),
                "build_peak_total_pss_mb": round(b_peak["pss"] / 2**20),
                "install_seconds": round(i_seconds, 2),
                "bytes_shipped": shipped,
            }

        figures["publish_100"] = [publish(first + batch) for batch in range(3)]
        # Retract one article: its line leaves the source (here: the first line of fr.jsonl).
        lines = (src / "fr.jsonl").read_bytes().split(b"\n", 1)
        victim = orjson.loads(lines[0])["id"]
        (src / "fr.jsonl").unlink()  # a hard link to the corpus: write a new file instead
        (src / "fr.jsonl").write_bytes(lines[1])
        started = time.perf_counter()
        run_measured([PY, "scripts/build_bundles.py", "--src", str(src), "--out", str(built)])
        _, _, i_out = run_measured([PY, "scripts/install_bundle.py", str(built), str(served)])
        path = f"/api/v1/fr/articles/{victim}"
        wait_for(lambda: all(get(port, path)[0] == 404 for _ in range(10)))
        figures["retract_1"] = {
            "end_to_end_seconds": round(time.perf_counter() - started, 2),
            "bytes_shipped": int(re.search(r"objects, (\d+) bytes", i_out).group(1)),  # type: ignore[union-attr]
        }
        # The switch under load: the same wrk run, steady, across an install and switch (the
        # build ran before, as it does in CI), and across a whole publish with its build on
        # this same 2-core machine (its CPU then competes with the server's).
        seconds = args.load_seconds

        def under_load(action: Any) -> tuple[dict[str, Any], dict[str, Any]]:
            result: dict[str, Any] = {}
            thread = threading.Thread(target=lambda: result.update(wrk(port, latest_urls, seconds)))
            thread.start()
            time.sleep(seconds / 4)
            done = action()
            thread.join()
            return result, done

        figures["steady_latest"] = wrk(port, latest_urls, seconds)
        write_batch(src, first + 3)
        run_measured([PY, "scripts/build_bundles.py", "--src", str(src), "--out", str(built)])
        new_id = json.loads((built / "manifest.json").read_bytes())["bundle_id"]

        def install_and_switch() -> dict[str, Any]:
            started = time.perf_counter()
            run_measured([PY, "scripts/install_bundle.py", str(built), str(served)], sample=False)
            wait_for(lambda: all(ready_id() == new_id for _ in range(10)))
            return {"seconds": round(time.perf_counter() - started, 2)}

        figures["latest_during_switch"], figures["switch"] = under_load(install_and_switch)
        figures["latest_during_publish"], figures["publish_under_load"] = under_load(
            lambda: publish(first + 4)
        )
    finally:
        harness.stop(server)
    # A worker that died and was forked again while publishes were measured (as gunicorn's
    # select() made them at this scale) loads the bundle again and again beside the build:
    # such a run measures the crash loop, not the publish.
    exits = (work / "server.log").read_text(errors="replace").count("exited with code")
    if exits:
        raise SystemExit(f"{exits} server workers exited during the run: see {work}/server.log")
    harness.cli.emit(figures, args, render, harness.cli.invocation("publish.py", argv))
    return 0


def render(f: dict[str, Any], command: str) -> None:
    """The docs/benchmarks.md section of one run, every figure beside its target."""
    n = f["per_language"]
    full = f["full_build"]
    pubs = f["publish_100"]
    during, steady = f.get("latest_during_switch") or {}, f["steady_latest"]
    whole = f.get("latest_during_publish") or {}

    def ok(good: bool) -> str:
        return "met" if good else "**not met**"

    rows: list[tuple[str, str, str, bool | None]] = []
    if full is None:  # --reuse
        rows.append(("full build", "not run: the bundles of an earlier run (--reuse)", "", None))
    else:
        rows += [
            ("full build, wall time", f"{full['seconds']:.0f} s", "< 600 s", full["seconds"] < 600),
            (
                "full build, peak memory (summed PSS of the process tree; largest single RSS)",
                f"{full['peak_total_pss_mb']} MB; {full['peak_largest_rss_mb']} MB",
                "< 2,048 MB",
                full["peak_total_pss_mb"] < 2048,
            ),
            (
                "bundle size / source JSONL",
                f"{full['bundle_mb']} MB / {full['source_mb']} MB = {full['bundle_to_source']}x",
                "<= 2x",
                full["bundle_to_source"] <= 2,
            ),
        ]
    rows += [
        (
            "start-up to /ready (gunicorn, warm page cache)",
            f"{f['startup_seconds_warm']} s",
            "< 2 s",
            f["startup_seconds_warm"] < 2,
        ),
        (
            "publish 100 articles end to end (build, install, served), 3 runs",
            ", ".join(f"{p['end_to_end_seconds']} s" for p in pubs),
            "< 10 s",
            max(p["end_to_end_seconds"] for p in pubs) < 10,
        ),
        (
            "of which the incremental build",
            ", ".join(f"{p['build_seconds']} s" for p in pubs),
            "",
            None,
        ),
        (
            "bytes shipped by install_bundle.py per publish",
            ", ".join(f"{p['bytes_shipped'] / 1e6:.1f} MB" for p in pubs),
            "not the archive",
            None,
        ),
        (
            "retract 1 article end to end (until 404)",
            f"{f['retract_1']['end_to_end_seconds']} s",
            "< 10 s",
            f["retract_1"]["end_to_end_seconds"] < 10,
        ),
    ]
    if during:
        rows += [
            (
                "latest under wrk -c8, p99: steady / during install and switch",
                f"{steady['p99_ms']:.2f} ms / {during['p99_ms']:.2f} ms",
                "<= 2x steady",
                during["p99_ms"] <= 2 * steady["p99_ms"],
            ),
            (
                "latest under wrk -c8, slowest request during install and switch",
                f"{during['max_ms']:.1f} ms (steady: {steady['max_ms']:.1f} ms)",
                "< 100 ms",
                during["max_ms"] < 100,
            ),
        ]
    if whole:
        rows.append(
            (
                "the same, with the build on this machine too: p99, slowest",
                f"{whole['p99_ms']:.2f} ms, {whole['max_ms']:.1f} ms",
                "(in production the build runs in CI)",
                None,
            )
        )
    lines = [
        f"## Publishing at 9 x {n:,} articles",
        "",
        f"`{command}` on this machine ({f['machine_cpus']} cores); "
        "how publishing works: [publishing.md](publishing.md).",
        "",
        "| figure | measured | target | |",
        "|---|---|---|---|",
        *(
            f"| {name} | {value} | {target} | {'' if good is None else ok(good)} |"
            for name, value, target, good in rows
        ),
        "",
    ]
    sections.write(f"publishing-{n}", "\n".join(lines))


if __name__ == "__main__":
    sys.exit(main())
