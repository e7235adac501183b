"""The benchmark behind docs/benchmarks.md : ``make bench`` runs it.

Generates (and caches) the synthetic corpus, times the bundle build, then for each server
configuration starts the real app and the Falcon ceiling app on a free loopback port, measures
start-up, runs wrk over fixed URL lists, reads worker memory, and finally runs nginx over the
same responses pre-rendered as files. Writes bench/results/<timestamp>.json and renders
docs/benchmarks.md with a chart.

    python bench/run.py [--quick] [--per-language N] [--duration S]
    python bench/run.py --render bench/results/<timestamp>.json   # docs only
"""

from __future__ import annotations

import argparse
import http.client
import importlib.util
import json
import sys
import tempfile
import time
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import harness
import report
from harness import BENCH, CACHE, ENDPOINTS, NGINX, RESULTS, ROOT, WRK, log, shown


@dataclass(frozen=True)
class Options:
    per_language: int
    seed: int
    duration: int
    warmup: int
    connections: int
    rate: int
    threads: int
    quick: bool
    servers: tuple[str, ...]
    docs: bool
    yardsticks_only: bool


@dataclass
class Server:
    """One way of serving a WSGI app; ``command`` gets the target and the port."""

    name: str
    app: str  # "real", "ceiling" or "same-bytes" (the ceiling app answering the real bytes)
    port: int = 0
    log: Path | None = None

    def command(self, opts: Options) -> list[str]:
        target = harness.APP if self.app == "real" else "ceiling_app:app"
        return harness.server_command(self.name, self.port, target)

    def shown(self, opts: Options) -> str:
        """The command as documented: the gunicorn variants differ only in their environment."""
        prefix = ""
        if self.name == "gunicorn-sync":
            prefix = "NEWS_WORKER_CLASS=sync "
        elif self.name == "gunicorn-gthread":
            prefix = f"NEWS_WORKER_CLASS=gthread NEWS_THREADS={opts.threads} "
        if self.app == "same-bytes":
            prefix = "CEILING_SAME_BYTES=$TMP/static " + prefix
        return prefix + shown(self.command(opts)).replace(str(self.port), "PORT")

    def env(self, opts: Options, bundle: Path, scratch: Path) -> dict[str, str]:
        env = harness.environment(
            bundle,
            self.port,
            scratch / "comments.sqlite3",
            worker_class="gthread" if self.name == "gunicorn-gthread" else "sync",
            threads=opts.threads,
        )
        if self.app != "real":
            env["PYTHONPATH"] = str(BENCH)
        if self.app == "same-bytes":
            env["CEILING_SAME_BYTES"] = str(scratch / "static")
        return env


# --- one run ---------------------------------------------------------------------------------


def measure(
    runs: list[dict[str, Any]],
    app: str,
    server: str,
    endpoint: str,
    port: int,
    urls: Path,
    duration: int,
    opts: Options,
    rate: int | None = None,
    cpu_pids: list[int] | None = None,
    **extra: Any,
) -> None:
    """One wrk run, recorded in `runs` and logged."""
    result = harness.wrk(port, urls, duration, opts.connections, rate=rate, cpu_pids=cpu_pids)
    runs.append(
        {"app": app, "server": server, "endpoint": endpoint, "rate": rate, **extra, **result}
    )
    label = f"{endpoint} @{rate}/s" if rate else endpoint
    log(
        f"  {label:18s} {result['rps']:9.1f} req/s  p50 {result['p50_ms']:.2f} ms"
        f"  p99 {result['p99_ms']:.2f} ms  errors {result['http_errors']}"
    )


# --- the app in process ----------------------------------------------------------------------


# --- the run ---------------------------------------------------------------------------------


def search_groups(search_urls: Path, scratch: Path) -> dict[str, Path]:
    """Split the search URL list by script family and number of query terms."""
    groups: dict[str, list[str]] = {}
    for url in search_urls.read_text().split():
        language = url.split("/")[3]
        query = parse_qs(urlsplit(url).query)["q"][0]
        family = harness.script_family(language)
        groups.setdefault(f"search-{family}-{len(query.split())}", []).append(url)
    files = {}
    for name, urls in sorted(groups.items()):
        files[name] = scratch / f"{name}.txt"
        files[name].write_text("\n".join(urls) + "\n")
    return files


def run_server(
    server: Server,
    opts: Options,
    bundle: Path,
    files: dict[str, Path],
    scratch: Path,
    nginx_root: Path | None,
) -> tuple[dict[str, Any], list[dict]]:
    server.port = harness.free_port()
    cmd = server.command(opts)
    server.log = scratch / f"{server.app}-{server.name}.log"
    log(f"{server.app} app under {server.name}: {server.shown(opts)}")
    started = time.perf_counter()
    proc = harness.start(cmd, server.env(opts, bundle, scratch), server.log)
    info: dict[str, Any] = {"app": server.app, "server": server.name, "command": server.shown(opts)}
    runs: list[dict[str, Any]] = []
    try:
        harness.wait_ready(server.port, proc)
        info["startup_s"] = round(time.perf_counter() - started, 3)
        if server.app == "real":
            harness.wait_ready(server.port, proc, "/ready")
            info["validation"] = harness.prerender(server.port, harness.all_urls(files), nginx_root)
            log(f"  validation: {info['validation']['status']}")
        elif server.app == "same-bytes":
            same_bytes_check(server.port, harness.all_urls(files), scratch / "static")
        pids = harness.workers_of(proc)
        cpu_pids = [proc.pid, *pids]
        # Warm caches and all workers.
        harness.wrk(server.port, files["mix"], opts.warmup, opts.connections)
        # The fixed body is the same for every URL: one run. The others answer per endpoint.
        plan = ["mix"] if server.app == "ceiling" else [*ENDPOINTS, "mix"]
        for endpoint in plan:
            measure(
                runs, server.app, server.name, endpoint, server.port, files[endpoint],
                opts.duration, opts, cpu_pids=cpu_pids,
            )  # fmt: skip
        if server.app == "real":
            # Search by query shape, each beside the get-by-id run above (shorter runs).
            for group, path in search_groups(files["search"], scratch).items():
                measure(
                    runs, server.app, server.name, group, server.port, path,
                    max(3, opts.duration // 3), opts, queries=len(path.read_text().split()),
                )  # fmt: skip
            measure(
                runs, server.app, server.name, "mix", server.port, files["mix"],
                opts.duration, opts, rate=opts.rate, cpu_pids=cpu_pids,
            )  # fmt: skip
        info["workers"] = [harness.memory(pid) for pid in harness.workers_of(proc)]
    finally:
        harness.stop(proc)
    return info, runs


def same_bytes_check(port: int, urls: list[str], root: Path) -> None:
    """Every URL answers the real app's saved body (a URL not saved would get the fixed
    article and measure the wrong bytes)."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    for url in urls:
        conn.request("GET", url)
        resp = conn.getresponse()
        if resp.read() != harness.static_file(root, url).read_bytes():
            raise RuntimeError(f"same-bytes ceiling: {url} is not the real app's body")
        conn.close()


def run_nginx(
    opts: Options, files: dict[str, Path], root: Path, scratch: Path
) -> tuple[dict[str, Any], list[dict]]:
    started = time.perf_counter()
    proc, port, command = harness.serve_static(root, scratch)
    log(f"nginx: {command}")
    info: dict[str, Any] = {"app": "static", "server": "nginx", "command": command}
    info["startup_s"] = round(time.perf_counter() - started, 3)
    runs: list[dict[str, Any]] = []
    try:
        pids = harness.workers_of(proc)
        harness.wrk(port, files["mix"], opts.warmup, opts.connections)
        for endpoint in (*ENDPOINTS, "mix"):
            measure(
                runs, "static", "nginx", endpoint, port, files[endpoint], opts.duration, opts,
                cpu_pids=[proc.pid, *pids],
            )  # fmt: skip
        info["workers"] = [harness.memory(pid) for pid in harness.workers_of(proc)]
    finally:
        harness.stop(proc)
    return info, runs


def run(opts: Options) -> dict[str, Any]:
    src, corpus_stats = harness.corpus(opts.per_language, opts.seed)
    files = harness.url_files(src)
    real_ok = not opts.yardsticks_only
    result: dict[str, Any] = {
        "timestamp": datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "options": opts.__dict__ | {"servers": list(opts.servers)},
        "machine": harness.machine(),
        "corpus": corpus_stats | {"dir": shown([str(src)])},
        "servers": [],
        "runs": [],
    }
    with tempfile.TemporaryDirectory(prefix="news-bench-") as tmp:
        scratch = Path(tmp)
        nginx_root = scratch / "static"
        bundle = scratch / "no-bundle"
        if real_ok:
            bundle, result["build"] = harness.build_bundle(src)
            log(f"bundle: {result['build']['seconds']} s, {result['build']['bytes'] / 1e6:.1f} MB")
            # How much of a server's figure is the app and how much is HTTP handling.
            result["app_cpu"] = harness.app_cpu(
                bundle, src / "urls", ",".join((*ENDPOINTS, "mix")), 1 if opts.quick else 3
            )
            log(f"app CPU per request, in-process: {result['app_cpu']}")
        rendered = False
        # The same-bytes ceiling answers with the real app's saved bodies (nginx's files).
        kinds = ("real", "ceiling", "same-bytes") if real_ok else ("ceiling",)
        for app_kind in kinds:
            for name in opts.servers:
                server = Server(name, app_kind)
                info, runs = run_server(
                    server, opts, bundle, files, scratch, None if rendered else nginx_root
                )
                rendered = rendered or app_kind == "real"
                result["servers"].append(info)
                result["runs"].extend(runs)
        if not rendered:  # no real app yet: nginx serves the ceiling's body for every URL
            import ceiling_app

            for url in harness.all_urls(files):
                harness.save(nginx_root, url, ceiling_app.BODY)
        info, runs = run_nginx(opts, files, nginx_root, scratch)
        result["servers"].append(info)
        result["runs"].extend(runs)
    return result


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--per-language", type=int, default=10_000)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--duration", type=int, default=15, help="seconds per wrk run")
    parser.add_argument("--warmup", type=int, default=3, help="seconds of warm-up per server")
    parser.add_argument("--connections", type=int, default=32)
    parser.add_argument("--rate", type=int, default=1000, help="req/s of the fixed-rate run")
    parser.add_argument("--threads", type=int, default=4, help="gthread threads per worker")
    parser.add_argument("--servers", default="gunicorn-sync,gunicorn-gthread,granian")
    parser.add_argument(
        "--quick",
        action="store_true",
        help="small corpus, short runs: checks the harness in about a minute",
    )
    parser.add_argument("--no-docs", action="store_true", help="write results JSON only")
    parser.add_argument(
        "--yardsticks-only",
        action="store_true",
        help="skip the real app: ceiling app and nginx only (harness checks)",
    )
    parser.add_argument("--render", type=Path, help="only render docs from a results JSON")
    args = parser.parse_args(argv)
    if args.render:
        report.render(json.loads(args.render.read_text()), ROOT / "docs")
        return 0
    if args.quick:
        args.per_language, args.duration, args.warmup = min(args.per_language, 300), 3, 1
    opts = Options(
        args.per_language,
        args.seed,
        args.duration,
        args.warmup,
        args.connections,
        args.rate,
        args.threads,
        args.quick,
        tuple(args.servers.split(",")),
        not args.no_docs,
        args.yardsticks_only,
    )
    missing = [m for m in ("granian", "matplotlib") if importlib.util.find_spec(m) is None]
    if missing or not Path(WRK).exists() or not Path(NGINX).exists():
        parser.error(
            f"missing {', '.join(missing) or 'wrk or nginx'}: run make bench (it installs "
            "bench/requirements.txt) and apt-get install wrk nginx-light"
        )
    result = run(opts)
    RESULTS.mkdir(exist_ok=True)
    stamp = result["timestamp"].replace(":", "").replace("-", "")
    path = RESULTS / f"{'quick-' if opts.quick else ''}{stamp}.json"
    path.write_text(json.dumps(result, indent=1, ensure_ascii=False) + "\n")
    log(f"results: {path.relative_to(ROOT)}")
    # A quick run checks the harness; its figures never overwrite the published page.
    docs = ROOT / "docs" if opts.docs and not opts.quick else CACHE / "quick-docs"
    report.render(result, docs)
    log(f"report: {(docs / 'benchmarks.md')}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
