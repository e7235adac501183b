"""Application cost without a server: calls ``app.wsgi`` in-process over the bench URL lists and
prints microseconds of CPU per request for each endpoint.

Server workers run the app on threads that py-spy cannot always attribute (granian's Rust
threads), so the app's own profile is taken here, where every frame is the app's:

    NEWS_BUNDLE_DIR=bench/.cache/bundle-... .venv/bin/py-spy record -r 500 -f raw -o app.raw -- \\
        .venv/bin/python bench/profile_app.py bench/.cache/corpus-.../urls search 5
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from collections.abc import Iterable
from pathlib import Path
from typing import Any
from urllib.parse import unquote_to_bytes

# `--accept-encoding`: the header every request sends (none: identity, the default).
ACCEPT_ENCODING: str | None = None


def environ(url: str) -> dict[str, Any]:
    path, _, query = url.partition("?")
    coding = {} if ACCEPT_ENCODING is None else {"HTTP_ACCEPT_ENCODING": ACCEPT_ENCODING}
    # PEP 3333: PATH_INFO holds the percent-decoded bytes as latin-1, like a real server sends.
    return {
        **coding,
        "REQUEST_METHOD": "GET",
        "PATH_INFO": unquote_to_bytes(path).decode("latin-1"),
        "QUERY_STRING": query,
        "SERVER_NAME": "127.0.0.1",
        "SERVER_PORT": "80",
        "SERVER_PROTOCOL": "HTTP/1.1",
        "REMOTE_ADDR": "127.0.0.1",
        "wsgi.url_scheme": "http",
        "wsgi.input": None,
        "wsgi.errors": sys.stderr,
    }


def measure(app: Any, urls: list[str], seconds: float) -> tuple[float, float, int]:
    """(CPU µs per request, KB per response, requests) over whole passes of the list."""
    envs = [environ(u) for u in urls]
    statuses: list[str] = []

    def start_response(
        status: str, _headers: Iterable[tuple[str, str]], _exc: object = None
    ) -> None:
        statuses.append(status)

    n = size = 0
    started = time.process_time()
    while time.process_time() - started < seconds:
        for env in envs:
            body: Iterable[bytes] = app(dict(env), start_response)
            size += sum(len(chunk) for chunk in body)
            n += 1
    cpu = time.process_time() - started
    bad = [s for s in statuses if not s.startswith("200")]
    if bad:
        raise SystemExit(f"{len(bad)} responses were not 200, e.g. {bad[0]}")
    return 1e6 * cpu / n, size / n / 1024, n


ARTICLE_ROUTES = (
    "/api/v1/{language}/articles",
    "/api/v1/{language}/articles/latest",
    "/api/v1/{language}/articles/search",
    "/api/v1/{language}/articles/{article_id}",
    "/api/v1/{language}/categories",
)


def minimal_app() -> Any:
    """The yardstick: Falcon answering the five article routes with one fixed, pre-serialised
    body and its content type, nothing else (no ETag, no Cache-Control, no middleware)."""
    import falcon
    from ceiling_app import BODY

    class Fixed:
        def on_get(self, _req: falcon.Request, resp: falcon.Response, **_params: str) -> None:
            resp.data = BODY
            resp.content_type = falcon.MEDIA_JSON

    app = falcon.App()
    fixed = Fixed()
    for route in ARTICLE_ROUTES:
        app.add_route(route, fixed)
    return app


def cold_urls(corpus: Path, count: int, seed: int = 7) -> list[str]:
    """At least ``count`` distinct URLs in the benchmark mix's proportions, drawn from every
    article of the corpus, so that no response cache can help: every id, every list page of
    every language and category, search for distinct words, latest at every limit."""
    import random
    from urllib.parse import quote

    import orjson
    from gen_corpus import MIX

    rng = random.Random(seed)
    by_kind: dict[str, list[str]] = {k: [] for k in MIX}
    words: dict[str, set[str]] = {}
    for source in sorted(corpus.glob("*.jsonl")):
        lang = source.stem
        cats: dict[str, int] = {}
        n = 0
        for line in source.open("rb"):
            doc = orjson.loads(line)
            n += 1
            cats[doc["category"]] = cats.get(doc["category"], 0) + 1
            by_kind["get"].append(f"/api/v1/{lang}/articles/{quote(doc['id'], safe='')}")
            for w in str(doc["title"]).split():
                words.setdefault(lang, set()).add(w.strip(".,:;!?\"'()").lower())
        by_kind["list"] += [
            f"/api/v1/{lang}/articles?page={p}&page_size={size}&order={order}"
            for size in (10, 20, 25, 50)
            for order in ("newest", "oldest")
            for p in range(1, n // size + 2)
        ]
        for cat, m in cats.items():
            by_kind["list"] += [
                f"/api/v1/{lang}/articles?page={p}&category={quote(cat, safe='')}"
                for p in range(1, m // 20 + 2)
            ]
        by_kind["latest"] += [f"/api/v1/{lang}/articles/latest?limit={k}" for k in range(1, 51)]
        by_kind["categories"].append(f"/api/v1/{lang}/categories")
        by_kind["search"] += [
            f"/api/v1/{lang}/articles/search?q={quote(w, safe='')}"
            for w in sorted(words.get(lang, ()))
            if w
        ]
    for urls in by_kind.values():
        rng.shuffle(urls)
    # Mix proportions, each kind as deep as it has distinct URLs (latest and categories have
    # few), scaled up until the mix holds ``count`` of them.
    total = max(count, 1)
    while True:
        mix = [u for kind, share in MIX.items() for u in by_kind[kind][: total * share // 100]]
        if len(mix) >= count or total > 100 * count:
            break
        total = total * 11 // 10
    rng.shuffle(mix)
    return mix


def against_minimal(
    app: Any, lists: dict[str, list[str]], seconds: float, rounds: int
) -> dict[str, dict[str, float]]:
    """Per endpoint: CPU µs per request of the app and of the minimal app, measured alternately
    round by round over the same URLs, and the median of the per-round ratios. `cold` is
    split between the rounds (each should last less than its share: >= 20,000 URLs at
    about 0.2 ms a request give each of three rounds about 1.3 s)."""
    from statistics import median

    minimal = minimal_app()
    out: dict[str, dict[str, float]] = {}
    for endpoint, urls in lists.items():
        ratios, real, base = [], [], []
        for r in range(rounds):
            # The cold mix is cut into one share per round, so that no URL comes back.
            share = urls[r::rounds] if endpoint == "cold" else urls
            us, _, _ = measure(app, share, seconds)
            bus, _, _ = measure(minimal, share, seconds)
            real.append(us)
            base.append(bus)
            ratios.append(us / bus)
        out[endpoint] = {
            "app_us": round(median(real), 1),
            "minimal_us": round(median(base), 1),
            "ratio": round(median(ratios), 2),
            "urls": len(urls),
        }
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("urls", type=Path, help="the urls/ directory of a bench corpus")
    parser.add_argument("endpoints", help="comma-separated: list,latest,get,search,categories,mix")
    parser.add_argument("seconds", type=float, nargs="?", default=3.0, help="per endpoint")
    parser.add_argument("--json", action="store_true", help="one JSON object on stdout")
    parser.add_argument(
        "--against-minimal",
        type=int,
        metavar="ROUNDS",
        help="divide by a minimal Falcon app (one fixed body), alternating for ROUNDS rounds",
    )
    parser.add_argument(
        "--cold",
        type=int,
        metavar="N",
        default=0,
        help="with --against-minimal: also a 'cold' mix of >= N distinct URLs from the corpus",
    )
    parser.add_argument(
        "--accept-encoding",
        metavar="VALUE",
        help="send this Accept-Encoding with every request (default: none, identity)",
    )
    args = parser.parse_args(argv)
    global ACCEPT_ENCODING
    ACCEPT_ENCODING = args.accept_encoding
    os.environ.setdefault("NEWS_COMMENTS_DSN", f"sqlite:///{tempfile.mkdtemp()}/c.sqlite3")
    from app.wsgi import create_app

    app = create_app()
    lists = {
        endpoint: [u for u in (args.urls / f"{endpoint}.txt").read_text().splitlines() if u]
        for endpoint in args.endpoints.split(",")
    }
    if args.against_minimal:
        if args.cold:
            lists["cold"] = cold_urls(args.urls.parent, args.cold)
        table = against_minimal(app, lists, args.seconds, args.against_minimal)
        if args.json:
            print(json.dumps(table))
        else:
            for endpoint, row in table.items():
                print(
                    f"{endpoint:10s} app {row['app_us']:8.1f} µs  minimal {row['minimal_us']:6.1f}"
                    f" µs  ratio {row['ratio']:5.2f}  ({row['urls']} URLs)"
                )
        return 0
    results = {}
    for endpoint, urls in lists.items():
        us, kb, n = measure(app, urls, args.seconds)
        results[endpoint] = {"cpu_us_per_req": round(us, 1), "kb_per_resp": round(kb, 1)}
        if not args.json:
            print(f"{endpoint:10s} {us:9.1f} µs/request  {kb:7.1f} KB/response  ({n} requests)")
    if args.json:
        print(json.dumps(results))
    return 0


if __name__ == "__main__":
    sys.exit(main())
