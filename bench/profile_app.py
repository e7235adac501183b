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


def environ(url: str) -> dict[str, Any]:
    path, _, query = url.partition("?")
    # PEP 3333: PATH_INFO holds the percent-decoded bytes as latin-1, like a real server sends.
    return {
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


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("urls", type=Path, help="the urls/ directory of a bench corpus")
    parser.add_argument("endpoints", help="comma-separated: list,latest,get,search,categories,mix")
    parser.add_argument("seconds", type=float, nargs="?", default=3.0, help="per endpoint")
    parser.add_argument("--json", action="store_true", help="one JSON object on stdout")
    args = parser.parse_args(argv)
    os.environ.setdefault("NEWS_COMMENTS_DSN", f"sqlite:///{tempfile.mkdtemp()}/c.sqlite3")
    from app.wsgi import create_app

    app = create_app()
    results = {}
    for endpoint in args.endpoints.split(","):
        urls = [u for u in (args.urls / f"{endpoint}.txt").read_text().splitlines() if u]
        us, kb, n = measure(app, urls, args.seconds)
        results[endpoint] = {"cpu_us_per_req": round(us, 1), "kb_per_resp": round(kb, 1)}
        if not args.json:
            print(f"{endpoint:10s} {us:9.1f} µs/request  {kb:7.1f} KB/response  ({n} requests)")
    if args.json:
        print(json.dumps(results))
    return 0


if __name__ == "__main__":
    sys.exit(main())
