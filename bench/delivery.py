"""Compressed delivery (contract section 8) against identity, with nginx gzip_static as anchor.

    python bench/delivery.py [--per-language 2000] [--baseline REV] [--rounds 2] [--docs]

In one run, on one corpus (bench/gen_corpus.py, default 9 x 2,000 as in the delivery issue):

* build time and bundle size with the compressed pieces, against the builder of git REV
  (before compression) on the same sources;
* wrk ``-t1 -c32`` over the benchmark mix against gunicorn (production config, 2 sync
  workers), once without ``Accept-Encoding`` (identity) and once with what browsers send
  (``gzip, deflate, br, zstd``), rounds alternated, medians;
* nginx (Debian package) serving the app's own identity and gzip bodies as files with
  ``gzip_static on``, under the same browser header: the anchor;
* body bytes per response per encoding over the whole mix, beside what compressing each
  whole page would give (gzip -6, zstd -3, br 5), for the synthetic corpus and for the
  hand-written sample (``data/sample``), whose text compresses less.

Targets (issue: delivery): compressed mix >= 0.9 x identity mix; compressed bytes <= 40% of
identity; bundle <= 2 x source.
"""

from __future__ import annotations

import gzip
import http.client
import json
import shutil
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
sys.path.insert(0, str(BENCH))
import harness  # noqa: E402
import sections  # noqa: E402
from harness import ROOT  # noqa: E402

BASELINE = "c8474ae"  # main before compressed pieces (docs/delivery.md)
BROWSER = "gzip, deflate, br, zstd"
ENCODINGS = ("identity", "gzip", "zstd", "br")


def fetch(port: int, url: str, encoding: str) -> tuple[int, dict[str, str], bytes]:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    try:
        headers = {} if encoding == "identity" else {"Accept-Encoding": encoding}
        conn.request("GET", url, headers=headers)
        resp = conn.getresponse()
        return resp.status, {k.lower(): v for k, v in resp.getheaders()}, resp.read()
    finally:
        conn.close()


def decode(body: bytes, coding: str | None) -> bytes:
    if not coding:
        return body
    if coding == "gzip":
        return gzip.decompress(body)
    if coding == "zstd":
        # Composed pages are one zstd frame per piece: read them all.
        return zstandard.ZstdDecompressor().decompressobj(read_across_frames=True).decompress(body)
    if coding == "br":
        return brotli.decompress(body)
    raise ValueError(coding)


def sizes(port: int, urls: list[str], nginx_root: Path | None = None) -> dict[str, Any]:
    """Body bytes per encoding over `urls` (each checked to decode to the identity body),
    and whole-page compression of the identity bodies for comparison. With `nginx_root`, also
    writes the identity and gzip bodies there for the gzip_static anchor."""
    total = {e: 0 for e in (*ENCODINGS, "browser")}
    chosen: dict[str, dict[str, int]] = {e: {} for e in ENCODINGS}
    whole = {"gzip -6": 0, "zstd -3": 0, "br 5": 0}
    cctx = zstandard.ZstdCompressor(level=3)
    for url in urls:
        status, _, identity = fetch(port, url, "identity")
        if status != 200:
            raise RuntimeError(f"{url}: {status}")
        total["identity"] += len(identity)
        whole["gzip -6"] += len(gzip.compress(identity, 6, mtime=0))
        whole["zstd -3"] += len(cctx.compress(identity))
        whole["br 5"] += len(brotli.compress(identity, quality=5))
        for encoding in ENCODINGS[1:]:
            status, headers, body = fetch(port, url, encoding)
            coding = headers.get("content-encoding")
            if decode(body, coding) != identity:
                raise RuntimeError(f"{url} ({encoding}): body does not decode to identity")
            total[encoding] += len(body)
            name = coding or "identity"
            chosen[encoding][name] = chosen[encoding].get(name, 0) + 1
            if nginx_root is not None and encoding == "gzip":
                target = harness.save(nginx_root, url, identity)
                if coding == "gzip":
                    target.with_name(target.name + ".gz").write_bytes(body)
        _, headers, body = fetch(port, url, BROWSER)
        total["browser"] += len(body)
    n = len(urls)
    return {
        "urls": n,
        "mean_bytes": {k: round(v / n) for k, v in total.items()},
        "ratio": {k: round(v / total["identity"], 3) for k, v in total.items()},
        "whole_page_ratio": {k: round(v / total["identity"], 3) for k, v in whole.items()},
        "chosen": chosen,
    }


def sample_urls(src: Path) -> list[str]:
    """Every article that is not retracted (a retracted one answers 410 with its notice)
    and every list page (default page size) of a small corpus."""
    urls = []
    for path in sorted(src.glob("*.jsonl")):
        language = path.stem
        records = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
        ids = [r["id"] for r in records if "retracted" not in r]
        urls += [f"/api/v1/{language}/articles/{quote(i, safe='')}" for i in ids]
        urls += [f"/api/v1/{language}/articles?page={p}" for p in range(1, len(records) // 20 + 2)]
        urls.append(f"/api/v1/{language}/articles/latest")
    return urls


def bundle_stats(code: Path, src: Path, out: Path) -> dict[str, Any]:
    started = time.perf_counter()
    harness.build(code, src, out, "--full")
    seconds = time.perf_counter() - started
    size = sum(p.stat().st_size for p in out.rglob("*") if p.is_file())
    source = sum(p.stat().st_size for p in src.glob("*.jsonl"))
    return {"seconds": round(seconds, 1), "bytes": size, "to_source": round(size / source, 3)}


def render(f: dict[str, Any], command: str) -> None:
    s = f["summary"]
    identity, browser = s["app identity"]["rps_median"], s["app browser"]["rps_median"]
    met = "met" if browser / identity >= 0.9 else "not met"
    nginx = s["nginx browser"]["rps_median"]
    syn, hand = f["bytes"]["synthetic"], f["bytes"]["sample"]
    b, base = f["bundle"]["current"], f["bundle"]["baseline"]
    lines = [
        f"## Delivery: compressed responses (9 x {f['per_language']:,}, one run)",
        "",
        f"`{command}`: gunicorn (production config, 2 sync workers), wrk `-t1 -c32` over the "
        f"benchmark mix, {f['duration_s']} s per run, {f['rounds']} alternating rounds, "
        f"medians. Browser header: `Accept-Encoding: {BROWSER}`.",
        "",
        "| run | req/s | p99 ms | vs identity | target |",
        "|---|---|---|---|---|",
        f"| app, identity | {identity:.0f} | {s['app identity']['p99_ms_median']:.2f} | 1.00 | |",
        f"| app, browser header | {browser:.0f} | {s['app browser']['p99_ms_median']:.2f} "
        f"| {browser / identity:.2f} | >= 0.90: {met} |",
        f"| nginx `gzip_static`, same gzip bodies | {nginx:.0f} "
        f"| {s['nginx browser']['p99_ms_median']:.2f} | {nginx / identity:.2f} "
        f"| anchor: app / nginx = {browser / nginx:.2f} |",
        "",
        "Body bytes against identity (whole mix; every body checked to decode to the identity "
        "body):",
        "",
        "| corpus | identity mean bytes | gzip | zstd | br | browser header "
        "| whole-page gzip -6 | whole-page zstd -3 | whole-page br 5 |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for name, row in (("synthetic (benchmark mix)", syn), ("hand-written sample", hand)):
        r, w = row["ratio"], row["whole_page_ratio"]
        lines.append(
            f"| {name} | {row['mean_bytes']['identity']:,} | {r['gzip']:.1%} | {r['zstd']:.1%} "
            f"| {r['br']:.1%} | {r['browser']:.1%} | {w['gzip -6']:.1%} | {w['zstd -3']:.1%} "
            f"| {w['br 5']:.1%} |"
        )
    lines += [
        "",
        f"Target: browser-header bytes <= 40% of identity: "
        f"{'met' if syn['ratio']['browser'] <= 0.4 else 'not met'} "
        f"({syn['ratio']['browser']:.1%}).",
        "",
        f"Bundle: {b['bytes'] / 1e6:,.1f} MB = {b['to_source']:.2f} x source, full build "
        f"{b['seconds']:.1f} s; before compressed pieces (`{f['baseline']}`): "
        f"{base['bytes'] / 1e6:,.1f} MB = {base['to_source']:.2f} x, {base['seconds']:.1f} s. "
        f"Target <= 2 x source: {'met' if b['to_source'] <= 2 else 'not met'}.",
        "",
        f"Measured {f['when']}.",
        "",
    ]
    sections.write("delivery", "\n".join(lines))


def main(argv: list[str] | None = None) -> int:
    parser = harness.cli.parser(__doc__)
    harness.cli.add_corpus(parser, per_language=2_000)
    parser.add_argument("--baseline", default=BASELINE)
    harness.cli.add_rounds(parser, duration=10, rounds=2)
    harness.cli.add_outputs(parser)
    args = parser.parse_args(argv)
    command = harness.cli.invocation("delivery.py", argv)
    if args.render:
        render(json.loads(args.render.read_text()), command)
        return 0
    scratch = Path(tempfile.mkdtemp(prefix="news-delivery-"))
    corpus = harness.generated(args.corpus, args.per_language, scratch)
    procs: list[subprocess.Popen[bytes]] = []
    try:
        src = harness.sources(corpus, scratch / "src")
        with harness.checkout(args.baseline, scratch / "baseline-code") as old_code:
            baseline = bundle_stats(old_code, src, scratch / "b-baseline")
        bundle = {"baseline": baseline, "current": bundle_stats(ROOT, src, scratch / "b-current")}
        harness.log(f"bundles: {bundle}")
        proc, port = harness.serve(ROOT, scratch / "b-current", scratch)
        procs.append(proc)
        mix = corpus / "urls" / "mix.txt"
        root = scratch / "static"
        byte_figures = {"synthetic": sizes(port, mix.read_text().split(), root)}
        sample = scratch / "b-sample"
        harness.build(ROOT, ROOT / "data" / "sample", sample, "--full")
        sproc, sport = harness.serve(ROOT, sample, scratch)
        try:
            byte_figures["sample"] = sizes(sport, sample_urls(ROOT / "data" / "sample"))
        finally:
            harness.stop(sproc)
        harness.log(f"bytes: {json.dumps(byte_figures)}")
        # gzip_static, as browsers are answered: the .gz file beside each identity body.
        nproc, nport, _ = harness.serve_static(root, scratch, ("gzip_static on", "gzip_vary on"))
        procs.append(nproc)
        plan = (
            ("app identity", port, ()),
            ("app browser", port, (f"Accept-Encoding: {BROWSER}",)),
            ("nginx browser", nport, (f"Accept-Encoding: {BROWSER}",)),
        )
        for _, p, headers in plan:
            harness.wrk(p, mix, 3, headers=headers)  # warm-up
        results: dict[str, list[dict[str, Any]]] = {}
        for round_ in range(args.rounds):
            for name, p, headers in plan:
                result = harness.wrk(p, mix, args.duration, headers=headers)
                if result["http_errors"]:
                    raise RuntimeError(f"{name}: {result['http_errors']} errors")
                results.setdefault(name, []).append(result)
                per_response = result["bytes"] / result["requests"]
                harness.log(
                    f"round {round_ + 1} {name:14s} {result['rps']:9.1f} req/s"
                    f"  p99 {result['p99_ms']:.2f} ms  {per_response:.0f} bytes/response"
                )
        summary = {
            key: {
                **harness.medians(runs),
                "wire_bytes_per_response": round(
                    statistics.median(r["bytes"] / r["requests"] for r in runs)
                ),
            }
            for key, runs in results.items()
        }
        figures = {
            "per_language": args.per_language,
            "baseline": args.baseline,
            "duration_s": args.duration,
            "rounds": args.rounds,
            "bundle": bundle,
            "bytes": byte_figures,
            "summary": summary,
            "when": datetime.now(UTC).strftime("%Y-%m-%dT%H:%MZ"),
        }
        harness.cli.emit(figures, args, render, command)
    finally:
        for proc in procs:
            harness.stop(proc)
        shutil.rmtree(scratch, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
