"""ETag / If-None-Match / Cache-Control, HEAD, and headers every response carries (section 5)."""

from __future__ import annotations

import json

import pytest
from falcon.testing import TestClient

from tests.conftest import CACHE_CONTROL
from tests.helpers import JA_ID, KO_ID, article_path

CACHEABLE: list[tuple[str, str]] = [
    ("/api/v1/en/articles", ""),
    ("/api/v1/en/articles", "page=2&page_size=5"),
    ("/api/v1/en/articles", "category=politics"),
    ("/api/v1/en/articles", "page=99999999999999999999"),
    ("/api/v1/de/articles", ""),
    ("/api/v1/en/articles/latest", ""),
    ("/api/v1/en/articles/latest", "limit=3"),
    ("/api/v1/en/articles/search", "q=title"),
    (article_path("en", "hello world"), ""),
    (article_path("ko", KO_ID), ""),
    (article_path("ja", JA_ID), ""),
    ("/api/v1/en/categories", ""),
    ("/api/v1/ko/categories", ""),
    ("/api/v1/it/categories", ""),
]


@pytest.mark.parametrize(("path", "query"), CACHEABLE)
def test_etag_and_cache_control(client: TestClient, path: str, query: str) -> None:
    first = client.simulate_get(path, query_string=query or None)
    assert first.status_code == 200
    etag = first.headers["etag"]
    assert etag.startswith('"') and etag.endswith('"') and len(etag) > 2
    assert first.headers["cache-control"] == CACHE_CONTROL
    # Stable across requests for the same bundle.
    again = client.simulate_get(path, query_string=query or None)
    assert again.headers["etag"] == etag and again.content == first.content

    for header in (etag, f"W/{etag}", f'"nope", {etag}', "*"):
        cached = client.simulate_get(
            path, query_string=query or None, headers={"If-None-Match": header}
        )
        assert cached.status_code == 304, header
        assert cached.content == b""
        assert cached.headers["etag"] == etag
        assert cached.headers["cache-control"] == CACHE_CONTROL

    for header in ('"nope"', etag[:-2] + '"', 'W/"x"'):
        fresh = client.simulate_get(
            path, query_string=query or None, headers={"If-None-Match": header}
        )
        assert fresh.status_code == 200, header
        assert fresh.content == first.content

    head = client.simulate_head(path, query_string=query or None)
    assert head.status_code == 200
    assert head.content == b""
    assert head.headers["etag"] == etag
    assert head.headers["content-type"].startswith("application/json")
    assert head.headers["cache-control"] == CACHE_CONTROL
    head_304 = client.simulate_head(
        path, query_string=query or None, headers={"If-None-Match": etag}
    )
    assert head_304.status_code == 304 and head_304.content == b""


def test_etags_differ_between_different_bodies(client: TestClient) -> None:
    """A validator shared by two different bodies would make a cache serve the wrong one."""
    variants = [
        ("/api/v1/en/articles", "page=1"),
        ("/api/v1/en/articles", "page=2"),
        ("/api/v1/en/articles", "page_size=5"),
        ("/api/v1/en/articles", "category=politics"),
        ("/api/v1/en/articles", "category=Politics"),
        ("/api/v1/fr/articles", ""),
        ("/api/v1/de/articles", ""),
        ("/api/v1/es/articles", ""),
        ("/api/v1/en/articles/latest", "limit=3"),
        ("/api/v1/en/articles/latest", "limit=4"),
        ("/api/v1/en/articles/search", "q=title"),
        ("/api/v1/en/articles/search", "q=paragraph"),
        ("/api/v1/en/categories", ""),
        ("/api/v1/de/categories", ""),
        ("/api/v1/es/categories", ""),
        (article_path("en", "hello"), ""),
        (article_path("en", "Hello"), ""),
        (article_path("en", "shared-id"), ""),
        (article_path("fr", "shared-id"), ""),
    ]
    etags: dict[str, bytes] = {}
    for path, query in variants:
        result = client.simulate_get(path, query_string=query or None)
        assert result.status_code == 200
        etag = result.headers["etag"]
        if etag in etags:
            assert etags[etag] == result.content, (path, query)
        etags[etag] = result.content
    assert len(set(etags.values())) > 10  # many distinct bodies were compared


@pytest.mark.parametrize(("path", "query"), CACHEABLE)
def test_head_matches_get_headers(client: TestClient, path: str, query: str) -> None:
    get = client.simulate_get(path, query_string=query or None)
    head = client.simulate_head(path, query_string=query or None)
    assert head.status_code == get.status_code == 200
    assert head.content == b""
    for name in ("content-type", "etag", "cache-control", "x-content-type-options"):
        assert head.headers[name] == get.headers[name]
    if "content-length" in head.headers:
        assert int(head.headers["content-length"]) == len(get.content)


@pytest.mark.parametrize(
    ("method", "path"),
    [
        ("GET", "/api/v1/en/articles"),
        ("GET", "/health"),
        ("GET", "/ready"),
        ("GET", "/openapi.json"),
        ("GET", "/api/v1/xx/articles"),
        ("GET", "/api/v1/en/articles/nope"),
        ("GET", "/api/v1/en/articles?page=0"),
        ("GET", "/missing"),
        ("POST", "/api/v1/en/articles"),
        ("HEAD", "/api/v1/en/categories"),
    ],
)
def test_every_response_has_nosniff_and_json(client: TestClient, method: str, path: str) -> None:
    path, _, query = path.partition("?")
    result = client.simulate_request(method, path, query_string=query or None)
    assert result.headers["x-content-type-options"] == "nosniff"
    assert result.headers["content-type"].startswith("application/json")
    if method != "HEAD":
        json.loads(result.content)


@pytest.mark.parametrize(
    "path", ["/api/v1/xx/articles", "/api/v1/en/articles/nope", "/missing", "/health"]
)
def test_errors_and_ops_are_not_publicly_cached(client: TestClient, path: str) -> None:
    result = client.simulate_get(path)
    assert not result.headers.get("cache-control", "").startswith("public")
    assert "etag" not in result.headers
