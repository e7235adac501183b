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
import contextlib
import hashlib
import http.client
import importlib.util
import json
import os
import platform
import re
import resource
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections import Counter
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, unquote, urlsplit

import gen_corpus
import report

ROOT = Path(__file__).resolve().parent.parent
BENCH = ROOT / "bench"
CACHE = BENCH / ".cache"
RESULTS = BENCH / "results"
LUA = BENCH / "wrk" / "cycle.lua"
VENV_BIN = Path(sys.executable).parent
WRK = shutil.which("wrk") or "/usr/bin/wrk"
NGINX = shutil.which("nginx") or "/usr/sbin/nginx"
ENDPOINTS = ("list", "latest", "get", "search", "categories")
WORKERS = 2


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


# GRANIAN_OPTS of the Makefile: what `make serve SERVER=granian` runs.
GRANIAN_OPTS = (
    "--interface",
    "wsgi",
    "--blocking-threads",
    "1",
    "--backpressure",
    "32",
    "--respawn-failed-workers",
)


@dataclass
class Server:
    """One way of serving a WSGI app; ``command`` gets the target and the port."""

    name: str
    app: str  # "real" or "ceiling"
    port: int = 0
    proc: subprocess.Popen[bytes] | None = None
    log: Path | None = None
    extra_env: dict[str, str] = field(default_factory=dict)

    def command(self, opts: Options) -> list[str]:
        target = "app.wsgi:app" if self.app == "real" else "ceiling_app:app"
        if self.name.startswith("gunicorn"):
            # The production config file; worker class, threads and bind come from its env vars.
            return [str(VENV_BIN / "gunicorn"), "-c", "app/gunicorn_conf.py", target]
        return [
            str(VENV_BIN / "granian"),
            *GRANIAN_OPTS,
            "--workers",
            str(WORKERS),
            "--host",
            "127.0.0.1",
            "--port",
            str(self.port),
            "--no-access-log",
            target,
        ]

    def shown(self, opts: Options) -> str:
        """The command as documented: the gunicorn variants differ only in their environment."""
        prefix = ""
        if self.name == "gunicorn-sync":
            prefix = "NEWS_WORKER_CLASS=sync "
        elif self.name == "gunicorn-gthread":
            prefix = f"NEWS_WORKER_CLASS=gthread NEWS_THREADS={opts.threads} "
        return prefix + shown(self.command(opts)).replace(str(self.port), "PORT")

    def env(self, opts: Options, bundle: Path, scratch: Path) -> dict[str, str]:
        env = dict(os.environ)
        env.update(
            NEWS_BUNDLE_DIR=str(bundle),
            NEWS_COMMENTS_DSN=f"sqlite:///{scratch / 'comments.sqlite3'}",
            NEWS_BIND=f"127.0.0.1:{self.port}",
            WEB_CONCURRENCY=str(WORKERS),
            NEWS_WORKER_CLASS="gthread" if self.name == "gunicorn-gthread" else "sync",
            NEWS_THREADS=str(opts.threads),
            NEWS_LOG_LEVEL="warning",
        )
        if self.app == "ceiling":
            env["PYTHONPATH"] = str(BENCH)
        return env


# --- processes -------------------------------------------------------------------------------


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def start(cmd: list[str], env: dict[str, str], log: Path) -> subprocess.Popen[bytes]:
    with log.open("wb") as out:
        # Own session: stop() signals exactly this process group and nothing else.
        return subprocess.Popen(
            cmd, cwd=ROOT, env=env, stdout=out, stderr=subprocess.STDOUT, start_new_session=True
        )


def stop(proc: subprocess.Popen[bytes]) -> None:
    if proc.poll() is not None:
        return
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGTERM)
    try:
        proc.wait(timeout=20)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()


def wait_ready(
    port: int, proc: subprocess.Popen[bytes], path: str = "/health", timeout: float = 60.0
) -> float:
    """Seconds from now until ``path`` answers 200 (polled every 5 ms)."""
    started = time.perf_counter()
    while time.perf_counter() - started < timeout:
        if proc.poll() is not None:
            raise RuntimeError(f"server exited with {proc.returncode} before answering")
        try:
            conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
            conn.request("GET", path)
            status = conn.getresponse().status
            conn.close()
            if status == 200:
                return time.perf_counter() - started
        except OSError:
            pass
        time.sleep(0.005)
    raise RuntimeError(f"no answer on {path} within {timeout} s")


def descendants(pid: int) -> list[int]:
    children: dict[int, list[int]] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        children.setdefault(int(fields[1]), []).append(int(stat.parent.name))
    out, todo = [], [pid]
    while todo:
        for child in children.get(todo.pop(), []):
            out.append(child)
            todo.append(child)
    return out


def workers_of(proc: subprocess.Popen[bytes]) -> list[int]:
    """Worker processes: descendants running the app (not helpers such as resource trackers)."""
    pids = []
    for pid in descendants(proc.pid):
        try:
            cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
        except OSError:
            continue
        if b"resource_tracker" not in cmdline:
            pids.append(pid)
    return pids


def memory(pid: int) -> dict[str, int]:
    """kB from smaps_rollup. Private_Clean holds bundle pages touched by this worker alone: they
    are page cache, not heap, so the private figure that matters is Private_Dirty."""
    values: dict[str, int] = {}
    for line in Path(f"/proc/{pid}/smaps_rollup").read_text().splitlines()[1:]:
        key, _, rest = line.partition(":")
        values[key] = int(rest.split()[0])
    return {
        "pid": pid,
        "rss_kb": values["Rss"],
        "pss_kb": values["Pss"],
        "shared_kb": values["Shared_Clean"] + values["Shared_Dirty"],
        "private_kb": values["Private_Clean"] + values["Private_Dirty"],
        "private_dirty_kb": values["Private_Dirty"],
        "anonymous_kb": values["Anonymous"],
    }


def cpu_seconds(pids: list[int]) -> float:
    total = 0
    for pid in pids:
        with contextlib.suppress(OSError):
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
            total += int(fields[11]) + int(fields[12])  # utime + stime, in clock ticks
    return total / os.sysconf("SC_CLK_TCK")


# --- wrk -------------------------------------------------------------------------------------


def wrk(
    port: int,
    urls: Path,
    duration: int,
    opts: Options,
    rate: int | None = None,
    cpu_pids: list[int] | None = None,
    headers: tuple[str, ...] = (),
) -> dict[str, Any]:
    cmd = [
        WRK,
        "-t1",
        f"-c{opts.connections}",
        f"-d{duration}s",
        "--timeout",
        "10s",
        *(arg for header in headers for arg in ("-H", header)),
        "-s",
        str(LUA),
        f"http://127.0.0.1:{port}",
        "--",
        str(urls),
    ]
    if rate:
        cmd.append(str(rate))
    cpu_before = cpu_seconds(cpu_pids or [])
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=duration + 120, check=True)
    line = next((x for x in out.stdout.splitlines() if x.startswith("BENCH_JSON ")), None)
    if line is None:
        raise RuntimeError(f"wrk printed no result:\n{out.stdout}\n{out.stderr}")
    result: dict[str, Any] = json.loads(line.removeprefix("BENCH_JSON "))
    if cpu_pids:  # server CPU per request: a figure that does not depend on the client's share
        used = cpu_seconds(cpu_pids) - cpu_before
        result["server_cpu_us_per_req"] = round(used * 1e6 / max(result["requests"], 1), 1)
    result["command"] = shown(cmd).replace(str(port), "PORT")
    return result


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
    result = wrk(port, urls, duration, opts, rate=rate, cpu_pids=cpu_pids)
    runs.append(
        {"app": app, "server": server, "endpoint": endpoint, "rate": rate, **extra, **result}
    )
    label = f"{endpoint} @{rate}/s" if rate else endpoint
    log(
        f"  {label:18s} {result['rps']:9.1f} req/s  p50 {result['p50_ms']:.2f} ms"
        f"  p99 {result['p99_ms']:.2f} ms  errors {result['http_errors']}"
    )


def shown(cmd: list[str]) -> str:
    text = " ".join(cmd)
    for path, name in (
        (str(CACHE), "bench/.cache"),
        (str(VENV_BIN), ".venv/bin"),
        (str(ROOT) + "/", ""),
    ):
        text = text.replace(path, name)
    return text


def log(msg: str) -> None:
    print(f"[bench {time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


# --- corpus, bundle, pre-rendered responses ---------------------------------------------------


def corpus(opts: Options) -> tuple[Path, dict[str, Any]]:
    digest = hashlib.sha256(Path(gen_corpus.__file__).read_bytes()).hexdigest()[:10]
    out = CACHE / f"corpus-n{opts.per_language}-s{opts.seed}-{digest}"
    stats_file = out / "stats.json"
    if not stats_file.exists():
        log(f"generating corpus {out.name}")
        tmp = Path(tempfile.mkdtemp(dir=CACHE, prefix="corpus-tmp-"))
        started = time.perf_counter()
        stats: dict[str, Any] = dict(gen_corpus.generate(tmp, opts.per_language, opts.seed))
        stats["seconds"] = round(time.perf_counter() - started, 2)
        (tmp / "stats.json").write_text(json.dumps(stats))
        shutil.rmtree(out, ignore_errors=True)
        tmp.rename(out)
    return out, json.loads(stats_file.read_text())


def build_bundle(src: Path, opts: Options) -> tuple[Path, dict[str, Any]]:
    out = CACHE / f"bundle-{src.name.removeprefix('corpus-')}"
    cmd = [sys.executable, "scripts/build_bundles.py", "--src", str(src), "--out", str(out)]
    log("building bundle: " + shown(cmd))
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    subprocess.run(cmd, cwd=ROOT, check=True, stdout=subprocess.DEVNULL)
    seconds = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    peak = after.ru_maxrss
    files = [p for p in out.rglob("*") if p.is_file()]
    return out, {
        "seconds": round(seconds, 2),
        # CPU time too: wall time alone misleads when the machine is not quiet.
        "cpu_seconds": round(
            after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime, 2
        ),
        "bytes": sum(p.stat().st_size for p in files),
        "files": len(files),
        # ru_maxrss of children is the largest child so far; only meaningful if it grew.
        "peak_rss_mb": round(peak / 1024, 1) if peak > before.ru_maxrss else None,
        "command": shown(cmd),
    }


def url_files(src: Path) -> dict[str, Path]:
    return {name: src / "urls" / f"{name}.txt" for name in (*ENDPOINTS, "mix")}


def all_urls(files: dict[str, Path]) -> list[str]:
    seen: dict[str, None] = {}
    for path in files.values():
        seen.update(dict.fromkeys(filter(None, path.read_text(encoding="utf-8").splitlines())))
    return list(seen)


def nginx_file(root: Path, url: str) -> Path:
    # Must agree with nginx.conf's try_files "/$uri/_$args": $uri is percent-decoded, $args raw.
    path, _, query = url.partition("?")
    return root / unquote(path).lstrip("/") / f"_{query}"


def prerender(port: int, urls: list[str], root: Path | None) -> dict[str, Any]:
    """Fetches every URL once from the real app: checks each answers 200 and saves the bodies
    for nginx, so nginx serves byte-for-byte the app's responses."""
    statuses: Counter[int] = Counter()
    bad: list[str] = []
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    for url in urls:
        conn.request("GET", url)
        resp = conn.getresponse()
        body = resp.read()
        statuses[resp.status] += 1
        if resp.status != 200 and len(bad) < 10:
            bad.append(f"{resp.status} {url} {body[:120]!r}")
        if root is not None:
            target = nginx_file(root, url)
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(body)
        if resp.getheader("connection", "").lower() == "close":
            conn.close()
    return {
        "urls": len(urls),
        "status": {str(k): v for k, v in sorted(statuses.items())},
        "bad": bad,
    }


NGINX_CONF = """\
{user}worker_processes {workers};
daemon off;
pid {tmp}/nginx.pid;
error_log {tmp}/error.log warn;
events {{ worker_connections 1024; }}
http {{
    access_log off;
    types {{ }}
    default_type application/json;
    sendfile on;
    tcp_nopush on;
    tcp_nodelay on;
    keepalive_timeout 65;
    keepalive_requests 1000000;
    open_file_cache max=20000 inactive=120s;
    client_body_temp_path {tmp}/client_body;
    proxy_temp_path {tmp}/proxy;
    fastcgi_temp_path {tmp}/fastcgi;
    uwsgi_temp_path {tmp}/uwsgi;
    scgi_temp_path {tmp}/scgi;
    server {{
        listen 127.0.0.1:{port};
        root {root};
        location = /health {{ return 200 '{{"status":"ok"}}'; }}
        location / {{ try_files "/$uri/_$args" =404; }}
    }}
}}
"""


def app_cpu(bundle: Path, files: dict[str, Path], scratch: Path, opts: Options) -> dict:
    """The app's own CPU per request, without a server (bench/profile_app.py): shows how much
    of a server's figure is the app and how much is HTTP handling."""
    cmd = [
        sys.executable,
        str(BENCH / "profile_app.py"),
        str(files["mix"].parent),
        ",".join((*ENDPOINTS, "mix")),
        "1" if opts.quick else "3",
        "--json",
    ]
    env = dict(
        os.environ,
        NEWS_BUNDLE_DIR=str(bundle),
        NEWS_COMMENTS_DSN=f"sqlite:///{scratch / 'profile.sqlite3'}",
    )
    out = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, check=True)
    return dict(json.loads(out.stdout.splitlines()[-1]))


# --- the run ---------------------------------------------------------------------------------


SCRIPT_FAMILIES = {
    "latin": ("en", "fr", "de", "es", "it"),
    "cjk": ("zh_cn", "zh_tw", "ja"),
    "hangul": ("ko",),
}


def search_groups(search_urls: Path, scratch: Path) -> dict[str, Path]:
    """Split the search URL list by script family and number of query terms."""
    groups: dict[str, list[str]] = {}
    for url in search_urls.read_text().split():
        language = url.split("/")[3]
        query = parse_qs(urlsplit(url).query)["q"][0]
        family = next(f for f, langs in SCRIPT_FAMILIES.items() if language in langs)
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
    server.port = free_port()
    cmd = server.command(opts)
    server.log = scratch / f"{server.app}-{server.name}.log"
    log(f"{server.app} app under {server.name}: {server.shown(opts)}")
    started = time.perf_counter()
    proc = start(cmd, server.env(opts, bundle, scratch), server.log)
    info: dict[str, Any] = {"app": server.app, "server": server.name, "command": server.shown(opts)}
    runs: list[dict[str, Any]] = []
    try:
        wait_ready(server.port, proc)
        info["startup_s"] = round(time.perf_counter() - started, 3)
        if server.app == "real":
            wait_ready(server.port, proc, "/ready")
            info["validation"] = prerender(server.port, all_urls(files), nginx_root)
            log(f"  validation: {info['validation']['status']}")
        pids = workers_of(proc)
        cpu_pids = [proc.pid, *pids]
        wrk(server.port, files["mix"], opts.warmup, opts)  # warm caches and all workers
        plan = [*ENDPOINTS, "mix"] if server.app == "real" else ["mix"]
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
        info["workers"] = [memory(pid) for pid in workers_of(proc)]
    finally:
        stop(proc)
    return info, runs


def run_nginx(
    opts: Options, files: dict[str, Path], root: Path, scratch: Path
) -> tuple[dict[str, Any], list[dict]]:
    tmp = scratch / "nginx"
    tmp.mkdir()
    port = free_port()
    # As root, nginx would switch its workers to "nobody", who cannot read our private temp
    # dir; as another user the directive is ignored, so it is set only for root.
    user = "user root;\n" if os.geteuid() == 0 else ""
    conf = tmp / "nginx.conf"
    conf.write_text(NGINX_CONF.format(user=user, workers=WORKERS, tmp=tmp, port=port, root=root))
    cmd = [NGINX, "-p", str(tmp), "-e", str(tmp / "error.log"), "-c", str(conf)]
    log(f"nginx: {' '.join(cmd)}")
    started = time.perf_counter()
    proc = start(cmd, dict(os.environ), tmp / "stdout.log")
    shown_cmd = shown(cmd).replace(str(tmp), "$TMP") + "  # conf: NGINX_CONF in bench/run.py"
    info: dict[str, Any] = {"app": "static", "server": "nginx", "command": shown_cmd}
    runs: list[dict[str, Any]] = []
    try:
        wait_ready(port, proc)
        info["startup_s"] = round(time.perf_counter() - started, 3)
        pids = workers_of(proc)
        wrk(port, files["mix"], opts.warmup, opts)
        for endpoint in (*ENDPOINTS, "mix"):
            measure(
                runs, "static", "nginx", endpoint, port, files[endpoint], opts.duration, opts,
                cpu_pids=[proc.pid, *pids],
            )  # fmt: skip
        info["workers"] = [memory(pid) for pid in workers_of(proc)]
    finally:
        stop(proc)
    return info, runs


def machine() -> dict[str, Any]:
    cpuinfo = Path("/proc/cpuinfo").read_text()
    model = re.search(r"^model name\s*:\s*(.+)$", cpuinfo, re.M)
    mhz = re.search(r"^cpu MHz\s*:\s*(.+)$", cpuinfo, re.M)
    meminfo = Path("/proc/meminfo").read_text()
    total_kb = int(re.search(r"MemTotal:\s+(\d+)", meminfo).group(1))  # type: ignore[union-attr]

    def version(cmd: list[str]) -> str:
        out = subprocess.run(cmd, capture_output=True, text=True)
        return (out.stdout or out.stderr).strip().splitlines()[0]

    return {
        "cpu": model.group(1) if model else platform.processor(),
        "cpu_mhz": mhz.group(1) if mhz else None,
        "cores": os.cpu_count(),
        "memory_gib": round(total_kb / 1024**2, 1),
        "free": subprocess.run(["free", "-m"], capture_output=True, text=True).stdout,
        "kernel": platform.release(),
        "python": platform.python_version(),
        "versions": {
            "wrk": version([WRK, "-v"]),
            "nginx": version([NGINX, "-v"]),
            "gunicorn": version([str(VENV_BIN / "gunicorn"), "--version"]),
            "granian": version([str(VENV_BIN / "granian"), "--version"]),
            "falcon": version([sys.executable, "-c", "import falcon; print(falcon.__version__)"]),
        },
    }


def run(opts: Options) -> dict[str, Any]:
    CACHE.mkdir(parents=True, exist_ok=True)
    src, corpus_stats = corpus(opts)
    files = url_files(src)
    real_ok = not opts.yardsticks_only
    result: dict[str, Any] = {
        "timestamp": datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "options": opts.__dict__ | {"servers": list(opts.servers)},
        "machine": machine(),
        "corpus": corpus_stats | {"dir": shown([str(src)])},
        "servers": [],
        "runs": [],
    }
    with tempfile.TemporaryDirectory(prefix="news-bench-") as tmp:
        scratch = Path(tmp)
        nginx_root = scratch / "static"
        bundle = scratch / "no-bundle"
        if real_ok:
            bundle, result["build"] = build_bundle(src, opts)
            log(f"bundle: {result['build']['seconds']} s, {result['build']['bytes'] / 1e6:.1f} MB")
            result["app_cpu"] = app_cpu(bundle, files, scratch, opts)
            log(f"app CPU per request, in-process: {result['app_cpu']}")
        rendered = False
        for app_kind in ("real", "ceiling") if real_ok else ("ceiling",):
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

            for url in all_urls(files):
                target = nginx_file(nginx_root, url)
                target.parent.mkdir(parents=True, exist_ok=True)
                target.write_bytes(ceiling_app.BODY)
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
