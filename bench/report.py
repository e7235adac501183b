"""Renders a bench/run.py results JSON as docs/benchmarks.md and docs/benchmarks.png."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import sections

# A load command's URL list: its directory (a temporary one) and its file name.
_URL_LIST_DIR = re.compile(r"\S*/([\w.-]+\.txt)\b")

ENDPOINTS = ("list", "latest", "get", "search", "categories", "mix")
SERVERS = ("gunicorn-sync", "gunicorn-gthread", "granian")


class Results:
    def __init__(self, data: dict[str, Any]) -> None:
        self.data = data
        self.runs: list[dict[str, Any]] = data["runs"]
        self.servers = [s for s in SERVERS if self.get("real", s, "mix")]
        self.ceilings = [s for s in SERVERS if self.get("ceiling", s, "mix")]

    def get(
        self, app: str, server: str, endpoint: str, rate: int | None = None
    ) -> dict[str, Any] | None:
        return next(
            (
                r
                for r in self.runs
                if (r["app"], r["server"], r["endpoint"], r["rate"])
                == (app, server, endpoint, rate)
            ),
            None,
        )

    def rps(self, app: str, server: str, endpoint: str) -> float:
        run = self.get(app, server, endpoint)
        return float(run["rps"]) if run else 0.0

    def info(self, app: str, server: str) -> dict[str, Any] | None:
        return next(
            (s for s in self.data["servers"] if s["app"] == app and s["server"] == server), None
        )

    def fastest(self) -> str | None:
        return max(self.servers, key=lambda s: self.rps("real", s, "mix"), default=None)


def pct(a: float, b: float) -> str:
    return f"{100 * a / b:.0f}%" if b else "n/a"


def mark(ok: bool) -> str:
    return "met" if ok else "**not met**"


def num(x: float) -> str:
    return f"{x:,.0f}"


def targets(r: Results) -> list[str]:
    rows = ["| target | measured | status |", "|---|---|---|"]
    if "gunicorn-sync" in r.servers and "gunicorn-sync" in r.ceilings:
        real, ceil = r.rps("real", "gunicorn-sync", "mix"), r.rps("ceiling", "gunicorn-sync", "mix")
        rows.append(
            f"| gunicorn (sync, the default): mix >= 80% of its Falcon ceiling | "
            f"{num(real)} / {num(ceil)} req/s = {pct(real, ceil)} | "
            f"{mark(real >= 0.8 * ceil)} |"
        )
    best = r.fastest()
    if best:
        mix = r.get("real", best, "mix") or {}
        real, ceil = float(mix.get("rps", 0)), r.rps("ceiling", best, "mix")
        static = r.rps("static", "nginx", "mix")
        rows += [
            f"| fastest server ({best}): mix >= 60% of its ceiling | {num(real)} / {num(ceil)} "
            f"req/s = {pct(real, ceil)} | {mark(bool(ceil) and real >= 0.6 * ceil)} |",
            f"| {best}: mix >= 50% of nginx | {num(real)} / {num(static)} req/s = "
            f"{pct(real, static)} | {mark(bool(static) and real >= 0.5 * static)} |",
            f"| {best}: mix p99 < 10 ms | {mix.get('p99_ms', 0):.2f} ms | "
            f"{mark(mix.get('p99_ms', 1e9) < 10)} |",
        ]
        get, search = r.rps("real", best, "get"), r.rps("real", best, "search")
        rows.append(
            f"| {best}: search >= 50% of get-by-id | {num(search)} / {num(get)} req/s = "
            f"{pct(search, get)} | {mark(bool(get) and search >= 0.5 * get)} |"
        )
    rate = r.data["options"]["rate"]
    for server in r.servers:
        fixed = r.get("real", server, "mix", rate)
        if fixed:
            rows.append(
                f"| {server}: p99 < 5 ms at {rate} req/s | p99 {fixed['p99_ms']:.2f} ms "
                f"({fixed['rps']:.0f} req/s achieved) | {mark(fixed['p99_ms'] < 5)} |"
            )
    build = r.data.get("build")
    if build:
        n = r.data["corpus"]["articles"]
        status = mark(build["seconds"] < 60) if n == 90_000 else "n/a (smaller corpus)"
        rows.append(
            f"| build of 9 x 10,000 articles < 60 s | {build['seconds']:.1f} s for "
            f"{n:,} articles | {status} |"
        )
    for server in r.servers:
        info = r.info("real", server) or {}
        if "startup_s" in info:
            rows.append(
                f"| {server}: start-up < 1 s | {info['startup_s']:.2f} s | "
                f"{mark(info['startup_s'] < 1)} |"
            )
        workers = info.get("workers") or []
        if workers:
            worst = max(w["private_dirty_kb"] for w in workers) / 1024
            rows.append(
                f"| {server}: private memory per worker < 60 MB | {worst:.1f} MB "
                f"(largest Private_Dirty) | {mark(worst < 60)} |"
            )
    return rows


def endpoint_table(r: Results) -> list[str]:
    cols = [f"{s} req/s | p50 / p99 ms" for s in r.servers] + ["nginx req/s | nginx p99 ms"]
    rows = ["| endpoint | " + " | ".join(cols) + " |", "|---|" + "---:|---:|" * len(cols)]
    for endpoint in ENDPOINTS:
        cells = []
        for server in r.servers:
            run = r.get("real", server, endpoint)
            cells += (
                [num(run["rps"]), f"{run['p50_ms']:.2f} / {run['p99_ms']:.2f}"] if run else ["", ""]
            )
        static = r.get("static", "nginx", endpoint)
        cells += [num(static["rps"]), f"{static['p99_ms']:.2f}"] if static else ["", ""]
        rows.append(f"| {endpoint} | " + " | ".join(cells) + " |")
    return rows


def ratio_table(r: Results) -> list[str]:
    rows = [
        "| server | real mix req/s | ceiling mix req/s | real / ceiling | same-bytes ceiling "
        "mix req/s | real / same-bytes | real / nginx | search / get "
        "| server CPU per mix request |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    static = r.rps("static", "nginx", "mix")
    for server in sorted(set(r.servers) | set(r.ceilings), key=SERVERS.index):
        real, ceil = r.rps("real", server, "mix"), r.rps("ceiling", server, "mix")
        same = r.rps("same-bytes", server, "mix")
        search, get = r.rps("real", server, "search"), r.rps("real", server, "get")
        cpu = (r.get("real", server, "mix") or {}).get("server_cpu_us_per_req")
        rows.append(
            f"| {server} | {num(real)} | {num(ceil)} | {pct(real, ceil)} | "
            f"{num(same) if same else ''} | {pct(real, same) if same else ''} | "
            f"{pct(real, static)} | {pct(search, get)} | "
            f"{f'{cpu:.0f} µs' if cpu else ''} |"
        )
    if static:
        rows.append(f"| nginx (static files) | {num(static)} | | | | | 100% | | |")
    return rows


def rate_table(r: Results) -> list[str]:
    rate = r.data["options"]["rate"]
    rows = [
        "| server | target req/s | achieved | p50 ms | p90 ms | p99 ms | max ms | errors |",
        "|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for server in r.servers:
        run = r.get("real", server, "mix", rate)
        if run:
            errors = run["http_errors"] + sum(run["socket_errors"].values())
            rows.append(
                f"| {server} | {rate} | {run['rps']:.0f} | {run['p50_ms']:.2f} | "
                f"{run['p90_ms']:.2f} | {run['p99_ms']:.2f} | {run['max_ms']:.1f} | "
                f"{errors} |"
            )
    return rows


def search_table(data: dict[str, Any]) -> list[str]:
    """Search by script family and number of terms, with get-by-id as the yardstick."""
    runs = [x for x in data["runs"] if x["app"] == "real" and x["rate"] is None]
    servers = [s for s in dict.fromkeys(x["server"] for x in runs)]
    groups = sorted({x["endpoint"] for x in runs if x["endpoint"].startswith("search-")})
    if not groups:
        return ["(no search breakdown in this run)"]
    by = {(x["server"], x["endpoint"]): x for x in runs}
    head = "| queries | " + " | ".join(f"{s} req/s | p50 / p99 ms | / get" for s in servers)
    lines = [head + " |", "|---|" + "---:|---:|---:|" * len(servers)]
    for group in ["get", *groups]:
        _, family, terms = [*group.split("-"), "", ""][:3]
        label = "get by id (yardstick)" if group == "get" else f"{family}, {terms} term(s)"
        if group != "get":
            label += f" ({by[(servers[0], group)].get('queries', '?')} URLs)"
        cells = []
        for server in servers:
            x, get = by.get((server, group)), by.get((server, "get"))
            if x is None or get is None:
                cells.append("| | ")
                continue
            latency = f"{x['p50_ms']:.2f} / {x['p99_ms']:.2f}"
            cells.append(f"{num(x['rps'])} | {latency} | {pct(x['rps'], get['rps'])}")
        lines.append(f"| {label} | " + " | ".join(cells) + " |")
    return lines


def app_cpu_table(r: Results) -> list[str]:
    cpu = r.data.get("app_cpu")
    if not cpu:
        return []
    best = r.fastest()
    rows = [
        "| endpoint | app CPU per request (in-process) | response KB | app-only ceiling, 2 cores "
        f"| {best or 'server'} server CPU per request |",
        "|---|---:|---:|---:|---:|",
    ]
    for endpoint, v in cpu.items():
        server = (
            (r.get("real", best, endpoint) or {}).get("server_cpu_us_per_req") if best else None
        )
        rows.append(
            f"| {endpoint} | {v['cpu_us_per_req']:.0f} µs | {v['kb_per_resp']:.1f} | "
            f"{num(2e6 / v['cpu_us_per_req'])} req/s | {f'{server:.0f} µs' if server else ''} |"
        )
    return rows


def process_table(r: Results) -> list[str]:
    rows = [
        "| app | server | start-up s | worker | RSS MB | shared MB | private MB | "
        "private dirty MB |",
        "|---|---|---:|---|---:|---:|---:|---:|",
    ]
    for info in r.data["servers"]:
        for i, w in enumerate(info.get("workers") or [{}]):
            mb = {k: f"{v / 1024:.1f}" for k, v in w.items() if k.endswith("_kb")}
            startup = f"{info['startup_s']:.2f}" if i == 0 and "startup_s" in info else ""
            rows.append(
                f"| {info['app']} | {info['server']} | {startup} | {i + 1} | "
                f"{mb.get('rss_kb', '')} | {mb.get('shared_kb', '')} | "
                f"{mb.get('private_kb', '')} | {mb.get('private_dirty_kb', '')} |"
            )
    return rows


def errors_note(r: Results) -> str:
    bad = [
        f"{x['app']}/{x['server']}/{x['endpoint']}"
        for x in r.runs
        if x["http_errors"] or any(x["socket_errors"].values())
    ]
    validation = next((s.get("validation") for s in r.data["servers"] if s.get("validation")), None)
    text = (
        "No run had an HTTP error or a socket error."
        if not bad
        else "Runs with errors (see the results JSON): " + ", ".join(bad) + "."
    )
    if validation:
        text += (
            f" Before the load, every one of the {validation['urls']:,} distinct URLs was "
            f"fetched once: statuses {validation['status']}."
        )
    return text


def commands(r: Results) -> list[str]:
    lines = [
        "```sh",
        "make bench                 # = .venv/bin/python bench/run.py",
        "# corpus (cached under bench/.cache, keyed by parameters and generator source)",
        f".venv/bin/python bench/gen_corpus.py --out {r.data['corpus']['dir']} "
        f"--per-language {r.data['options']['per_language']} "
        f"--seed {r.data['options']['seed']}",
    ]
    if r.data.get("build"):
        lines.append(r.data["build"]["command"])
    seen = set()
    for info in r.data["servers"]:
        if info["command"] not in seen:
            seen.add(info["command"])
            lines.append(f"# {info['app']} / {info['server']}\n{info['command']}")
    lines.append(
        "# env for gunicorn: NEWS_WORKER_CLASS=sync|gthread NEWS_THREADS="
        f"{r.data['options']['threads']} WEB_CONCURRENCY=2 NEWS_BIND=127.0.0.1:PORT"
    )
    shown = {}
    for run in r.runs:
        key = (run["endpoint"], run["rate"])
        # The URL lists live in a temporary directory: name the list, not the machine's path.
        shown.setdefault(key, _URL_LIST_DIR.sub(r"<urls>/\1", run["command"]))
    lines.append("# load (one per endpoint URL list, the mix, and the fixed-rate mix)")
    lines += sorted(set(shown.values()))
    lines.append("```")
    return lines


def machine(r: Results) -> list[str]:
    m = r.data["machine"]
    v = m["versions"]
    return [
        f"- CPU: {m['cpu']} ({m['cores']} cores visible), memory {m['memory_gib']} GiB, "
        f"Linux {m['kernel']}, Python {m['python']}",
        f"- {v['wrk']}; {v['nginx']}; {v['gunicorn']}; {v['granian']}; falcon {v['falcon']}",
        "- client and servers share the same cores (loopback); wrk uses one thread",
        "",
        "```",
        m["free"].rstrip(),
        "```",
    ]


def analysis() -> list[str]:
    """bench/analysis.md: the hand-written reading of the latest full run (profiles, causes)."""
    path = Path(__file__).with_name("analysis.md")
    return [path.read_text(encoding="utf-8").rstrip(), ""] if path.exists() else []


def render(data: dict[str, Any], docs: Path) -> None:
    docs.mkdir(parents=True, exist_ok=True)
    r = Results(data)
    opts = data["options"]
    corpus = data["corpus"]
    build = data.get("build")
    chart = docs / "benchmarks.png"
    plot(r, chart)
    best = r.fastest()
    quick = " (quick harness check, not a measurement)" if opts["quick"] else ""
    lines = [
        "# Benchmarks",
        "",
        f"Run of {data['timestamp']}{quick}: {corpus['articles']:,} synthetic articles "
        f"({opts['per_language']:,} per language, {corpus['bytes'] / 1e6:.0f} MB of JSONL), one "
        f"instance with 2 workers, wrk `-t1 -c{opts['connections']}` for {opts['duration']} s "
        f"per run after a {opts['warmup']} s warm-up. Figures are only "
        "comparable within one run: read the ratios. Regenerate with `make bench`; raw figures "
        "in `bench/results/`.",
        "",
        "## Targets",
        "",
        *targets(r),
        "",
        f"Fastest server for the real app in this run: **{best}**." if best else "",
        "",
        "## Throughput and latency per endpoint (real app)",
        "",
        *endpoint_table(r),
        "",
        f"![throughput and p99 per endpoint and server]({chart.name})",
        "",
        "## Search by script family and number of terms",
        "",
        "The search URL list split by the script of its language (latin: en, fr, de, es, it; "
        "cjk: zh_cn, zh_tw, ja; hangul: ko) and the number of words in `q`, each run for a "
        "third of the usual duration, beside the get-by-id run of the same server. Index build "
        'time and size are in "Bundle build" below (the search index is part of the bundle; '
        "per-language index sizes in `docs/search.md`).",
        "",
        *search_table(data),
        "",
        "## Ratios to the yardsticks",
        "",
        "The ceiling is `bench/ceiling_app.py`: Falcon answering every route with one fixed "
        "pre-serialised article (~3.5 KB), under the same server and worker count; the "
        "same-bytes ceiling is that app answering each URL with the real app's saved body for it "
        "(`CEILING_SAME_BYTES`, a dict lookup), so that the gap to it is the app's own work and "
        "not the size of its answers (the mix averages ~57 KB). nginx serves the real "
        "app's own responses, fetched once and saved as files (`try_files`), with 2 workers and "
        "keep-alive. Server CPU is the CPU time of the server's processes divided by the "
        "requests answered.",
        "",
        *ratio_table(r),
        "",
        "## Where the time goes",
        "",
        "`bench/profile_app.py` calls the WSGI app in-process over the same URL lists (no server, "
        "no client): its CPU per request bounds what 2 workers on 2 cores can ever serve. The "
        "server column is the whole server's CPU per request under load, HTTP included.",
        "",
        *app_cpu_table(r),
        "",
        *analysis(),
        f"## Fixed rate ({opts['rate']} req/s, the mix)",
        "",
        *rate_table(r),
        "",
        "wrk 4 has no rate option, so `bench/wrk/cycle.lua` paces requests in its `delay()` "
        "hook: every request start takes the next slot of one schedule (1 ms / rate apart) for "
        "all 32 connections, read from a monotonic clock through LuaJIT's FFI; a late slot is "
        "sent at once to catch up, so the rate is not silently lowered. Latency is measured "
        "from the request's send, as wrk always does.",
        "",
        "## Start-up and memory",
        "",
        "Start-up: from spawning the server to the first 200 on `/health`. Memory from "
        "`/proc/PID/smaps_rollup` of each worker after its load runs. The bundle is mapped "
        "read-only, so its pages are page cache: *shared* when both workers touched them, "
        "counted as *private* (clean) when only one did. *Private dirty* is the worker's own "
        "heap, the memory that grows with workers.",
        "",
        *process_table(r),
        "",
        "## Bundle build",
        "",
        (
            f"{build['seconds']:.1f} s ({build.get('cpu_seconds', 0):.1f} s CPU) for "
            f"{corpus['articles']:,} articles; bundle "
            f"{build['bytes'] / 1e6:.1f} MB in {build['files']} files"
            + (f"; builder peak RSS {build['peak_rss_mb']} MB" if build.get("peak_rss_mb") else "")
            + f". Corpus generation: {corpus.get('seconds', 0):.1f} s (cached between runs)."
        )
        if build
        else "No bundle builder was available in this run.",
        "",
        "## Errors",
        "",
        errors_note(r) + " wrk counts responses with status >= 400 and socket errors (connect, "
        "read, write, timeout after 10 s); no conditional requests are sent, so no 304s are "
        "expected.",
        "",
        "## Load mix",
        "",
        "`bench/gen_corpus.py` writes fixed URL lists next to the corpus "
        "(`urls/{list,latest,get,search,categories,mix}.txt`); `bench/wrk/cycle.lua` cycles one "
        "in file order, so every run sends the same requests. The mix (2,000 URLs, shuffled "
        "once with a fixed seed): 30% list (pages 1-5, a category 30% of the time), 20% "
        "latest, 30% get by id (including ids with spaces, `%`, `?`, `#`, `+`, Hangul and a "
        "200-character id), 15% search (one to three words taken from real titles), 5% "
        "categories, over all nine languages.",
        "",
        "## Machine",
        "",
        *machine(r),
        "",
        "## Commands",
        "",
        *commands(r),
        "",
    ]
    target = docs / "benchmarks.md"
    # Sections written by other benchmarks (bench/sections.py: cluster, publishing, layouts)
    # are kept by a re-render.
    old = target.read_text(encoding="utf-8") if target.exists() else ""
    kept = sections.kept(old)
    target.write_text("\n".join(lines) + ("\n" + kept if kept else ""), encoding="utf-8")


def plot(r: Results, path: Path) -> None:
    import matplotlib  # bench-only dependency (bench/requirements.txt)

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import matplotlib.ticker

    groups = [*ENDPOINTS, "mix\n(ceiling)"]
    series: list[tuple[str, list[dict[str, Any] | None]]] = [
        (s, [r.get("real", s, e) for e in ENDPOINTS] + [r.get("ceiling", s, "mix")])
        for s in SERVERS
        if s in r.servers or s in r.ceilings
    ]
    series.append(("nginx", [r.get("static", "nginx", e) for e in ENDPOINTS] + [None]))
    fig, (top, bottom) = plt.subplots(2, 1, figsize=(11, 7.5), sharex=True)
    width = 0.8 / len(series)
    for i, (name, runs) in enumerate(series):
        xs = [g + (i - (len(series) - 1) / 2) * width for g in range(len(groups))]
        top.bar(xs, [x["rps"] if x else 0 for x in runs], width, label=name)
        bottom.bar(xs, [x["p99_ms"] if x else 0 for x in runs], width, label=name)
    top.set_ylabel("requests/s")
    top.set_title(
        f"Throughput and p99 latency, wrk -t1 -c{r.data['options']['connections']}, "
        f"2 workers ({r.data['timestamp']})"
    )
    top.legend(ncols=len(series), fontsize=8)
    bottom.set_ylabel("p99 latency, ms (log)")
    bottom.set_yscale("log")
    bottom.yaxis.set_major_formatter(matplotlib.ticker.ScalarFormatter())
    bottom.set_xticks(range(len(groups)), groups)
    for ax in (top, bottom):
        ax.grid(axis="y", alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
