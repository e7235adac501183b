"""Whole-page compression and the edge (docs/delivery.md), in one run on hand-written text.

    flock /tmp/bench.lock python bench/whole_pages.py [--per-language 200] [--duration 5]
        [--rounds 2] [--docs]

On the hand-written sample (data/sample) and on the hand-written-style corpus
(bench/handwritten.py), served by gunicorn (production config, 2 sync workers):

* bytes: every list, latest, search and category page of a URL universe, asked in each
  coding, against the reference whole-page compressors on the identity body (gzip -6,
  zstd -3, br 5). Pages are compressed whole from their first answer (docs/delivery.md,
  "One answer per page and coding"); a server of an earlier release answered a page
  composed from pieces first, which the "pieces" column then reports.
  Target: whole <= 1.15 x reference.
* throughput: wrk over a Zipf mix (s = 1.1) of that universe, identity against the browser
  header (`gzip, deflate, br, zstd`), alternated rounds, medians. Target: >= 0.90.
* the edge: Varnish with deploy/varnish/edge.vcl in front of the app, warmed, against nginx
  serving the very bytes the edge serves (the app's whole-page zstd bodies) as static
  files, same mix and header. Target: edge >= 0.80 x nginx.
"""

from __future__ import annotations

import gzip
import http.client
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from urllib.parse import quote

import brotli
import zstandard

BENCH = Path(__file__).resolve().parent
ROOT = BENCH.parent
sys.path.insert(0, str(BENCH))
sys.path.insert(0, str(ROOT))
import handwritten  # noqa: E402
import harness  # noqa: E402
import sections  # noqa: E402

from cluster.edge import Edge  # noqa: E402

BROWSER = "gzip, deflate, br, zstd"
CODINGS = ("gzip", "zstd", "br")
REFERENCE = {
    "gzip": lambda b: len(gzip.compress(b, 6, mtime=0)),
    "zstd": lambda b: len(zstandard.ZstdCompressor(level=3).compress(b)),
    "br": lambda b: len(brotli.compress(b, quality=5)),
}
WORDS = {
    "en": ["bank", "rates", "the", "growth", "percent"],
    "fr": ["la", "croissance", "prix", "banque", "euros"],
    "de": ["die", "Wirtschaft", "Prozent", "Bank", "Preise"],
    "es": ["el", "paro", "precios", "banco", "euros"],
    "it": ["il", "Istat", "prezzi", "banca", "euro"],
    "ja": ["経済", "日銀", "物価", "政府", "成長"],
    "ko": ["경제", "금리", "한국은행", "물가", "성장"],
    "zh_cn": ["经济", "增长", "消费", "银行", "价格"],
    "zh_tw": ["經濟", "增長", "消費", "銀行", "價格"],
}


def fetch(port: int, url: str, coding: str | None) -> tuple[int, dict[str, str], bytes]:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    try:
        conn.request("GET", url, headers={"Accept-Encoding": coding} if coding else {})
        resp = conn.getresponse()
        return resp.status, {k.lower(): v for k, v in resp.getheaders()}, resp.read()
    finally:
        conn.close()


def universe(categories: dict[str, list[str]], pages: int) -> list[str]:
    urls = []
    for language, cats in categories.items():
        base = f"/api/v1/{language}"
        urls += [f"{base}/articles?page={p}" for p in range(1, pages + 1)]
        urls += [f"{base}/articles?page=1&page_size=50"]
        urls += [f"{base}/articles/latest?limit={n}" for n in (10, 20, 50)]
        urls += [f"{base}/articles/search?q={quote(w)}" for w in WORDS[language]]
        urls += [f"{base}/articles?category={quote(c)}" for c in cats]
    return urls


def zipf_mix(urls: list[str], n: int, seed: int = 7) -> list[str]:
    rng = random.Random(seed)
    ranked = urls[:]
    rng.shuffle(ranked)
    weights = [1 / (rank**1.1) for rank in range(1, len(ranked) + 1)]
    return rng.choices(ranked, weights, k=n)


def forms(port: int, url: str, coding: str) -> dict[str, bytes]:
    """The page in `coding` as composed from pieces and as compressed whole, told apart by
    the ETag (`-<coding>.w<id>` is whole). Each gunicorn worker composes a page the first
    time it is asked, so ask until the whole form comes (br: whole from the start)."""
    found: dict[str, bytes] = {}
    for _ in range(12):
        _, headers, body = fetch(port, url, coding)
        whole = f"-{coding}.w" in headers["etag"]
        found.setdefault("whole" if whole else "pieces", body)
        if whole:
            break
    if "whole" not in found:
        raise RuntimeError(f"{url} ({coding}): never compressed whole")
    return found


def sizes(port: int, urls: list[str]) -> dict[str, Any]:
    """Bytes per coding: composed from pieces, compressed whole, reference; worst page."""
    total: dict[str, int] = {"identity": 0}
    worst = {c: 0.0 for c in CODINGS}
    for url in urls:
        status, _, identity = fetch(port, url, None)
        if status != 200:
            raise RuntimeError(f"{url}: {status}")
        total["identity"] += len(identity)
        for coding in CODINGS:
            found = forms(port, url, coding)
            reference = REFERENCE[coding](identity)
            whole = found["whole"]
            first = found.get("pieces", whole)  # br has no pieces: its first answer is whole
            for key, value in (("first", first), ("whole", whole)):
                total[f"{coding} {key}"] = total.get(f"{coding} {key}", 0) + len(value)
            total[f"{coding} reference"] = total.get(f"{coding} reference", 0) + reference
            if len(identity) > 2000:
                worst[coding] = max(worst[coding], len(whole) / reference)
    ratio = {k: round(v / total["identity"], 3) for k, v in total.items()}
    to_ref = {
        c: {
            "first": round(total[f"{c} first"] / total[f"{c} reference"], 3),
            "whole": round(total[f"{c} whole"] / total[f"{c} reference"], 3),
            "worst_page": round(worst[c], 3),
        }
        for c in CODINGS
    }
    return {"pages": len(urls), "ratio": ratio, "to_reference": to_ref}


def wrk(
    port: int, mix: Path, duration: int, headers: tuple[str, ...], pids: list[int]
) -> dict[str, Any]:
    result = harness.wrk(port, mix, duration, cpu_pids=pids, headers=headers)
    if result["http_errors"]:
        raise RuntimeError(f"{result['http_errors']} errors on port {port}")
    return result


Plan = list[tuple[str, int, tuple[str, ...], list[int]]]


def alternate(plan: Plan, mix: Path, args: Any) -> dict[str, Any]:
    """Requests/s and the server's CPU time per request (its processes' user + system time
    over the run: the figure that depends least on what else the shared machine runs)."""
    for _, port, headers, pids in plan:
        wrk(port, mix, 2, headers, pids)  # warm-up: every page seen, whole pages cached
    runs: dict[str, list[dict[str, Any]]] = {}
    for _ in range(args.rounds):
        for name, port, headers, pids in plan:
            result = wrk(port, mix, args.duration, headers, pids)
            runs.setdefault(name, []).append(result)
            harness.log(
                f"{name}: {result['rps']:.0f} req/s, "
                f"{result['server_cpu_us_per_req']:.0f} µs CPU/request"
            )
    return {
        name: {
            "rps": [r["rps"] for r in rs],
            "median": statistics.median(r["rps"] for r in rs),
            "cpu_us": statistics.median(r["server_cpu_us_per_req"] for r in rs),
        }
        for name, rs in runs.items()
    }


def main(argv: list[str] | None = None) -> int:
    parser = harness.cli.parser(__doc__)
    parser.add_argument("--per-language", type=int, default=200)
    harness.cli.add_rounds(parser, duration=5, rounds=2)
    harness.cli.add_outputs(parser, json=False, render=False)
    args = parser.parse_args(argv)
    command = harness.cli.invocation("whole_pages.py", argv)
    scratch = Path(tempfile.mkdtemp(prefix="news-whole-"))
    procs: list[subprocess.Popen[bytes]] = []
    edge_pid = None
    try:
        src = scratch / "handwritten"
        categories = handwritten.generate(src, args.per_language)
        figures: dict[str, Any] = {"per_language": args.per_language, "bytes": {}}
        sample_cats = {
            p.stem: sorted({json.loads(x)["category"] for x in p.read_text().splitlines()})
            for p in sorted((ROOT / "data" / "sample").glob("*.jsonl"))
        }
        for name, corpus, cats, pages in (
            ("sample", ROOT / "data" / "sample", sample_cats, 1),
            ("handwritten", src, categories, 3),
        ):
            bundle = scratch / f"b-{name}"
            harness.build(ROOT, corpus, bundle, "--full")
            proc, port = harness.serve(ROOT, bundle, scratch)
            procs.append(proc)
            figures["bytes"][name] = sizes(port, universe(cats, pages))
            harness.log(f"{name}: {json.dumps(figures['bytes'][name])}")
        urls = universe(categories, 10)
        mix_lines = zipf_mix(urls, 20000)
        mix = scratch / "mix.txt"
        mix.write_text("\n".join(mix_lines) + "\n")
        figures["mix"] = {"distinct": len(set(mix_lines)), "universe": len(urls)}
        app_proc, app_port = proc, port  # the handwritten bundle's server
        edge = Edge(scratch / "edge" / "varnish", harness.free_port(), app_port)
        edge_pid = edge.start()
        harness.wait_ready(edge.port, app_proc, "/ready")
        # nginx serves the very bytes the edge serves: the app's zstd answers, as files.
        static = scratch / "static"
        for url in set(mix_lines):
            fetch(app_port, url, "zstd")
            _, headers, body = fetch(app_port, url, "zstd")
            assert headers.get("content-encoding") == "zstd", url
            harness.save(static, url, body)
        nproc, nginx_port, _ = harness.serve_static(
            static,
            scratch,
            ("add_header Content-Encoding zstd", "add_header Vary Accept-Encoding"),
            ready="/ready",
        )
        procs.append(nproc)
        browser = (f"Accept-Encoding: {BROWSER}",)
        workers = harness.workers_of(app_proc)
        figures["app"] = alternate(
            [
                ("app identity", app_port, (), workers),
                ("app browser", app_port, browser, workers),
            ],
            mix,
            args,
        )
        edge_pids = [edge_pid, *harness.descendants(edge_pid)]
        figures["edge"] = alternate(
            [
                ("edge browser", edge.port, browser, edge_pids),
                ("nginx static", nginx_port, browser, [nproc.pid, *harness.workers_of(nproc)]),
            ],
            mix,
            args,
        )
        figures["when"] = datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")
        figures["duration_s"], figures["rounds"] = args.duration, args.rounds
        harness.cli.emit(figures, args, render, command)
    finally:
        if edge_pid is not None:
            os.kill(edge_pid, 15)
            time.sleep(0.5)
        for proc in procs:
            harness.stop(proc)
    return 0


def render(f: dict[str, Any], command: str) -> None:
    app, edge = f["app"], f["edge"]
    lines = [
        "## Whole pages and the edge (one run)",
        "",
        f"`flock /tmp/bench.lock {command}`: gunicorn (production config, 2 sync workers); wrk "
        f"`-t1 -c32`, {f['duration_s']} s per point, {f['rounds']} alternated rounds, medians; "
        f"a Zipf (s = 1.1) mix of 20,000 requests over {f['mix']['universe']} list, latest, "
        f"search and category pages of the hand-written-style corpus "
        f"(`bench/handwritten.py`, 9 x {f['per_language']}), {f['mix']['distinct']} distinct.",
        "",
        "Bytes of every page per coding, composed from pieces (the first answer of each "
        "worker) and compressed whole (from the second; told apart by the ETag), against the "
        "reference compressor on the same identity body (sums over the pages; worst whole "
        "page over 2 KB). br has no pieces: its first answer is whole.",
        "",
        "| corpus | pages | coding | pieces / ref | whole / ref | worst whole page | "
        "whole / identity | target |",
        "|---|---|---|---|---|---|---|---|",
    ]
    names = {"gzip": "gzip -6", "zstd": "zstd -3", "br": "br 5"}
    for corpus, row in f["bytes"].items():
        for c in CODINGS:
            r = row["to_reference"][c]
            ok = "met" if r["worst_page"] <= 1.15 else "not met"
            lines.append(
                f"| {corpus} | {row['pages']} | {c} (ref {names[c]}) | {r['first']:.2f} "
                f"| {r['whole']:.2f} | {r['worst_page']:.2f} | "
                f"{row['ratio'][f'{c} whole']:.1%} | <= 1.15: {ok} |"
            )

    def rounds(run: dict[str, Any]) -> str:
        return ", ".join(f"{r:.0f}" for r in run["rps"])

    def row(name: str, run: dict[str, Any], base: dict[str, Any], target: float | None) -> str:
        ratio, cpu = run["median"] / base["median"], base["cpu_us"] / run["cpu_us"]
        verdict = ""
        if target is not None:
            verdict = f">= {target:.2f}: {'met' if ratio >= target else 'not met'} (req/s)"
        return (
            f"| {name} | {run['median']:.0f} | {rounds(run)} | {ratio:.2f} "
            f"| {run['cpu_us']:.0f} | {cpu:.2f} | {verdict} |"
        )

    a_id, a_br = app["app identity"], app["app browser"]
    e_ng, e_ed = edge["nginx static"], edge["edge browser"]
    lines += [
        "",
        "The machine's two cores are shared with other work, so requests/s vary from round "
        "to round; the server's CPU time per request (its processes, over each run) varies "
        "less, and its inverse ratio is what the throughput ratio would be on a quiet machine.",
        "",
        "| run | req/s (median) | rounds | req/s ratio | CPU µs/request | CPU ratio (inverse) "
        "| target |",
        "|---|---|---|---|---|---|---|",
        row("app, identity", a_id, a_id, None),
        row("app, browser header", a_br, a_id, 0.9),
        row("nginx, static files of the same zstd bodies", e_ng, e_ng, None),
        row("edge (Varnish) in front of the app, same mix and header", e_ed, e_ng, 0.8),
        "",
        f"Measured {f['when']}.",
        "",
    ]
    sections.write("whole-pages", "\n".join(lines))


if __name__ == "__main__":
    raise SystemExit(main())
