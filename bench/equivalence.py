"""Byte-for-byte equivalence of two versions of the app over the benchmark URLs.

`record` calls ``app.wsgi`` in process (the code under the current directory, or
``--code DIR``) for every URL of a bench corpus's url lists, in each request shape a client
sends, three times in a row (later answers may come from the response cache: all must stay
the same), and writes one line per answer:
status, headers except ``Date``, and the SHA-256 of the body. `compare` prints the first
differences between two recordings and exits 1 if there are any.

    python bench/equivalence.py record --bundle B --urls CORPUS/urls --out before.jsonl \
        [--code DIR] [--order zstd,gzip]
    python bench/equivalence.py compare before.jsonl after.jsonl

Both recordings must read the same bundle, built by the same builder (the bundle's bytes are
part of every answer).
"""

from __future__ import annotations

import argparse
import hashlib
import os
import subprocess
import sys
import tempfile
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

import orjson

HERE = Path(__file__).resolve().parent
# (name, extra WSGI environ): what browsers, CDNs and API clients send.
SHAPES: tuple[tuple[str, dict[str, str]], ...] = (
    ("plain", {}),
    ("gzip", {"HTTP_ACCEPT_ENCODING": "gzip"}),
    ("browser", {"HTTP_ACCEPT_ENCODING": "gzip, deflate, br, zstd"}),
    ("zstd", {"HTTP_ACCEPT_ENCODING": "zstd"}),
    ("head", {"REQUEST_METHOD": "HEAD", "HTTP_ACCEPT_ENCODING": "gzip"}),
)
REPEATS = 3
EXTRA_URLS = (
    "/health",
    "/ready",
    "/openapi.json",
    "/docs",
    "/sitemap.xml",
    "/api/v1/xx/articles",
    "/api/v1/en/articles?page=0",
    "/api/v1/en/articles/search?q=",
    "/api/v1/en/articles/no-such-article",
    "/api/v1/en/feed.atom",
    "/api/v1/en/feed.rss",
    "/api/v1/en/feed.json",
    "/api/v1/en/corrections",
)


def _urls(url_dir: Path) -> list[str]:
    seen: dict[str, None] = {}
    for name in sorted(url_dir.glob("*.txt")):
        for line in name.read_text().splitlines():
            if line:
                seen.setdefault(line, None)
    for extra in EXTRA_URLS:
        seen.setdefault(extra, None)
    return list(seen)


def _answers(
    app: Any, urls: list[str], shapes: tuple[tuple[str, dict[str, str]], ...] = SHAPES
) -> Iterator[dict[str, Any]]:
    sys.path.insert(0, str(HERE))
    from profile_app import environ

    out: dict[str, Any] = {}

    def start_response(
        status: str, headers: Iterable[tuple[str, str]], _exc: object = None
    ) -> None:
        out["status"] = status
        out["headers"] = sorted([k.lower(), v] for k, v in headers if k.lower() != "date")

    for url in urls:
        for shape, extra in shapes:
            for n in range(REPEATS):
                env = {**environ(url), **extra}
                out.clear()
                body = b"".join(app(env, start_response))
                etag = next((v for k, v in out["headers"] if k == "etag"), None)
                yield {
                    "url": url,
                    "shape": shape,
                    "n": n,
                    **out,
                    "body": hashlib.sha256(body).hexdigest(),
                }
                if etag and n == REPEATS - 1:
                    env = {**environ(url), **extra, "HTTP_IF_NONE_MATCH": etag}
                    body = b"".join(app(env, start_response))
                    yield {"url": url, "shape": shape, "n": "304", **out, "body": len(body)}


def _ordered(order: str | None) -> tuple[tuple[str, dict[str, str]], ...]:
    """The shapes in `order` (comma-separated names), then the others in their usual order."""
    named = dict(SHAPES)
    first = [name for name in (order or "").split(",") if name]
    unknown = [name for name in first if name not in named]
    if unknown:
        raise SystemExit(f"unknown shapes {unknown}: {', '.join(named)}")
    rest = [name for name, _ in SHAPES if name not in first]
    return tuple((name, named[name]) for name in first + rest)


def record(bundle: Path, url_dir: Path, out: Path, order: str | None = None) -> int:
    os.environ["NEWS_BUNDLE_DIR"] = str(bundle)
    sys.path.insert(0, str(Path.cwd()))  # this checkout's app/, not an installed one
    os.environ.setdefault("NEWS_COMMENTS_DSN", f"sqlite:///{tempfile.mkdtemp()}/c.sqlite3")
    from app.wsgi import create_app

    app = create_app()
    urls = _urls(url_dir)
    count = 0
    with out.open("wb") as f:
        for answer in _answers(app, urls, _ordered(order)):
            f.write(orjson.dumps(answer) + b"\n")
            count += 1
    print(f"{count} answers for {len(urls)} URLs -> {out}")
    return 0


def compare(before: Path, after: Path, show: int = 10) -> int:
    a = before.read_bytes().splitlines()
    b = after.read_bytes().splitlines()
    if len(a) != len(b):
        print(f"{before}: {len(a)} answers, {after}: {len(b)}")
    differ = [(x, y) for x, y in zip(a, b, strict=False) if x != y]
    for x, y in differ[:show]:
        print("-", x.decode())
        print("+", y.decode())
    print(f"{len(differ)} of {min(len(a), len(b))} answers differ")
    return 1 if differ or len(a) != len(b) else 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    rec = sub.add_parser("record", help="record every answer of the app under --code")
    rec.add_argument("--bundle", type=Path, required=True)
    rec.add_argument("--urls", type=Path, required=True, help="a bench corpus's urls/ directory")
    rec.add_argument("--out", type=Path, required=True)
    rec.add_argument("--code", type=Path, help="a checkout whose app/ to record (default: here)")
    rec.add_argument(
        "--order",
        help="shapes to send first for each URL, comma-separated (default: plain, gzip,"
        " browser, zstd, head): which shape meets a page first",
    )
    cmp_ = sub.add_parser("compare", help="differences between two recordings")
    cmp_.add_argument("before", type=Path)
    cmp_.add_argument("after", type=Path)
    args = parser.parse_args(argv)
    if args.command == "compare":
        return compare(args.before, args.after)
    if args.code:
        # Another checkout's app/: a fresh interpreter, so nothing of this one's app is loaded.
        cmd = [
            sys.executable,
            str(Path(__file__).resolve()),
            "record",
            "--bundle",
            str(args.bundle.resolve()),
            "--urls",
            str(args.urls.resolve()),
            "--out",
            str(args.out.resolve()),
            *(["--order", args.order] if args.order else []),
        ]
        env = {**os.environ, "PYTHONPATH": str(args.code.resolve())}
        return subprocess.run(cmd, env=env, cwd=args.code, check=False).returncode
    return record(args.bundle, args.urls, args.out, args.order)


if __name__ == "__main__":
    sys.exit(main())
