"""Two instances of two gunicorn workers each, serving copies of one bundle, answer the same
repeated requests with the same status, headers (but `Date`) and bytes, and every ETag they
gave validates on both (docs/delivery.md, "One answer per page and coding").
"""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from app.builder.builder import build
from tests.server import Server

pytestmark = pytest.mark.e2e

SAMPLE = Path(__file__).resolve().parent.parent / "data" / "sample"
TARGETS = (
    "/api/v1/en/articles?page_size=100",
    "/api/v1/ja/articles?page=2&page_size=5",
    "/api/v1/fr/articles/latest?limit=12",
    "/api/v1/en/articles/search?q=the&page_size=50",
    "/api/v1/de/articles/search?q=die",
    "/sitemaps/en.xml",
    "/api/v1/ko/categories",
    "/api/v1/en/articles/en-2026-11-central-bank-rates",
)
CODINGS = (None, "gzip", "zstd", "br", "gzip, deflate, br, zstd")


@pytest.fixture(scope="module")
def instances(tmp_path_factory: pytest.TempPathFactory) -> Iterator[list[Server]]:
    tmp = tmp_path_factory.mktemp("same-answer")
    build(SAMPLE, tmp / "bundle")
    servers = []
    try:
        for name in ("one", "two"):
            shutil.copytree(tmp / "bundle", tmp / name / "bundle")
            servers.append(Server(tmp / name, tmp / name / "bundle", workers=2).start())
        yield servers
    finally:
        for server in servers:
            server.stop()


def test_two_instances_of_two_workers_answer_the_same(instances: list[Server]) -> None:
    seen: dict[tuple[str, str, str | None], tuple[int, dict[str, str], bytes]] = {}
    etags: dict[tuple[str, str | None], set[str]] = {}
    # Each request six times on each instance, on fresh connections: both workers of each
    # see it, first and later.
    for _ in range(6):
        for server in instances:
            for target in TARGETS:
                for coding in CODINGS:
                    headers = {} if coding is None else {"Accept-Encoding": coding}
                    for method in ("GET", "HEAD"):
                        got = server.request(method, target, headers=headers)
                        named = {k: v for k, v in got.headers.items() if k != "date"}
                        answer = (got.status, named, got.body)
                        want = seen.setdefault((method, target, coding), answer)
                        assert answer == want, (server.port, method, target, coding)
                        etags.setdefault((target, coding), set()).add(named["etag"])
    for (target, coding), tags in etags.items():
        assert len(tags) == 1, (target, coding, tags)
        for server in instances:
            for tag in tags:
                headers = {"If-None-Match": tag}
                if coding is not None:
                    headers["Accept-Encoding"] = coding
                got = server.get(target, headers)
                assert got.status == 304 and got.headers["etag"] == tag, (target, coding)
