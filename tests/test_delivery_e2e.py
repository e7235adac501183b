"""Compressed delivery through a real gunicorn (its one-write response path) to curl's own
decoders (`curl --compressed`: zlib, brotli and zstd as linked into curl): articles,
categories, search, feeds and sitemaps."""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Iterator

import pytest

from app.builder.builder import build
from tests.helpers import KO_ID, article_path, corpus_records, write_corpus
from tests.http_support import decode_body
from tests.server import Server

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.skipif(shutil.which("curl") is None, reason="needs curl"),
]

URLS = (
    "/api/v1/en/articles",
    "/api/v1/en/articles?page=2&page_size=3",
    "/api/v1/en/articles?category=politics",
    "/api/v1/en/articles/latest?limit=7",
    "/api/v1/en/articles/search?q=title",
    "/api/v1/ja/articles/search?q=%E6%97%A5%E6%9C%AC",
    article_path("ko", KO_ID),
    "/api/v1/en/categories",
    "/api/v1/en/feed.atom",
    "/api/v1/ko/feed.rss?category=%EA%B2%BD%EC%A0%9C",
    "/api/v1/ja/feed.json",
    "/api/v1/en/feed.atom?category=no-such-category",
    "/sitemap.xml",
    "/sitemaps/en.xml",
    "/sitemaps/news.xml",
)


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    tmp = tmp_path_factory.mktemp("delivery-e2e")
    write_corpus(tmp / "src", corpus_records())
    build(tmp / "src", tmp / "bundle")
    with Server(tmp, tmp / "bundle", workers=1) as srv:
        yield srv


def curl(server: Server, url: str, *args: str) -> tuple[dict[str, str], bytes]:
    done = subprocess.run(
        ["curl", "-sS", "--fail", "-D", "-", *args, f"{server.base_url}{url}"],
        capture_output=True,
        check=True,
        timeout=30,
    )
    head, _, body = done.stdout.partition(b"\r\n\r\n")
    headers = {}
    for line in head.decode("latin-1").split("\r\n")[1:]:
        name, _, value = line.partition(":")
        headers[name.strip().lower()] = value.strip()
    return headers, body


@pytest.mark.parametrize("url", URLS)
def test_curl_compressed_decodes_to_the_identity_body(server: Server, url: str) -> None:
    plain_headers, identity = curl(server, url)
    assert "content-encoding" not in plain_headers
    assert plain_headers["vary"] == "Accept-Encoding"
    # curl's default list (deflate, gzip, br, zstd), then each coding alone.
    for args in (
        ("--compressed",),
        *(("--compressed", "-H", f"Accept-Encoding: {c}") for c in ("gzip", "br", "zstd")),
    ):
        headers, body = curl(server, url, *args)
        assert body == identity, (url, args, headers)
        assert headers["vary"] == "Accept-Encoding"
    # The bytes on the wire, undone by the Python reference decoders too.
    for coding in ("gzip", "br", "zstd"):
        headers, raw = curl(server, url, "-H", f"Accept-Encoding: {coding}")
        assert int(headers["content-length"]) == len(raw)
        assert decode_body(headers.get("content-encoding"), raw) == identity


def test_refused_identity_is_a_json_406(server: Server) -> None:
    done = subprocess.run(
        [
            "curl",
            "-sS",
            "-o",
            "-",
            "-w",
            "\n%{http_code}",
            "-H",
            "Accept-Encoding: compress, identity;q=0",
            f"{server.base_url}/api/v1/en/articles",
        ],
        capture_output=True,
        check=True,
        timeout=30,
    )
    body, _, status = done.stdout.rpartition(b"\n")
    assert status == b"406" and body.startswith(b'{"detail":"Not Acceptable')
