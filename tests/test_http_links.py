"""The RFC 8288 `Link` header on paged collections (docs/api.md §7)."""

from __future__ import annotations

import json
import re
from typing import Any
from urllib.parse import parse_qsl, quote, unquote, urlsplit

from falcon.testing import TestClient

from tests.helpers import KO_ID, article_path, expected_order

_LINK = re.compile(r'<([^>]*)>;\s*rel="([a-z]+)"')


def parse_link(header: str) -> dict[str, str]:
    """rel -> URL; each link is `<url>; rel="name"`, joined by commas."""
    links = dict((rel, url) for url, rel in _LINK.findall(header))
    assert len(links) == header.count(";"), header
    return links


def page_of(url: str) -> int:
    return int(dict(parse_qsl(urlsplit(url).query))["page"])


def test_parse_link() -> None:
    header = '</a?page=1>; rel="first", </a?x=%2C&page=3>; rel="last"'
    assert parse_link(header) == {"first": "/a?page=1", "last": "/a?x=%2C&page=3"}


def test_following_next_walks_the_whole_list(
    client: TestClient, records: list[dict[str, Any]]
) -> None:
    url, seen = "/api/v1/en/articles?page_size=3&unknown=dropped&order=newest", []
    while True:
        path, _, query = url.partition("?")
        result = client.simulate_get(path, query_string=query)
        assert result.status_code == 200
        seen += [item["id"] for item in json.loads(result.content)["items"]]
        links = parse_link(result.headers["link"])
        assert page_of(links["first"]) == 1
        # Only the parameters the operation knows travel on.
        assert set(dict(parse_qsl(urlsplit(links["last"]).query))) == {"page_size", "order", "page"}
        if "next" not in links:
            assert page_of(links["last"]) == page_of(url) if "page=" in url else 1
            break
        url = links["next"]
    assert seen == [a["id"] for a in expected_order(records, "en")]


def test_page_beyond_last_points_back_to_last(client: TestClient) -> None:
    result = client.simulate_get("/api/v1/en/articles", query_string="page=999999&page_size=5")
    links = parse_link(result.headers["link"])
    assert set(links) == {"first", "prev", "last"}
    assert page_of(links["prev"]) == page_of(links["last"])


def test_first_page_has_no_prev_and_search_keeps_q(client: TestClient) -> None:
    result = client.simulate_get("/api/v1/en/articles/search", query_string="q=the&page_size=1")
    links = parse_link(result.headers["link"])
    assert "prev" not in links
    assert dict(parse_qsl(urlsplit(links["first"]).query))["q"] == "the"
    total = json.loads(result.content)["total"]
    assert page_of(links["last"]) == max(1, total)


def test_empty_collection_has_first_and_last_page_one(client: TestClient) -> None:
    result = client.simulate_get("/api/v1/en/articles", query_string="category=no-such")
    links = parse_link(result.headers["link"])
    assert set(links) == {"first", "last"}
    assert page_of(links["first"]) == page_of(links["last"]) == 1


def test_comment_links_encode_the_article_id(client: TestClient) -> None:
    """A header is ASCII: an id with Hangul, a space or `%` is percent-encoded (UTF-8)."""
    for article_id, encoded in ((KO_ID, quote(KO_ID)), ("hello world", "hello%20world")):
        path = article_path("ko" if article_id == KO_ID else "en", article_id) + "/comments"
        result = client.simulate_get(path, query_string="page_size=5&order=oldest")
        assert result.status_code == 200, result.text
        links = parse_link(result.headers["link"])
        assert links["first"].isascii() and f"/articles/{encoded}/comments?" in links["first"]
        assert unquote(urlsplit(links["first"]).path) == unquote(path)
        assert dict(parse_qsl(urlsplit(links["first"]).query)) == {
            "page_size": "5",
            "order": "oldest",
            "page": "1",
        }
