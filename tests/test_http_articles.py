"""The five article operations against the second corpus (docs/api.md §2).

Expectations come from the oracle in tests.helpers, computed from the source records.
"""

from __future__ import annotations

import json
from typing import Any
from urllib.parse import quote

import pytest
from falcon.testing import Result, TestClient

from app.languages import LANGUAGES
from tests.helpers import (
    ARTICLE_FIELDS,
    AWKWARD_EN_IDS,
    EMPTY_LANGUAGES,
    JA_ID,
    KO_ID,
    LIST_FIELDS,
    NFC_CAFE,
    NFD_CAFE,
    POPULATED,
    SEARCH_FIELDS,
    SUMMARY_FIELDS,
    article_path,
    expected_article,
    expected_categories,
    expected_order,
    expected_summaries,
    total_pages,
)

Records = list[dict[str, Any]]


def get(client: TestClient, path: str, query: str = "") -> Result:
    result = client.simulate_get(path, query_string=query or None)
    assert result.headers["content-type"].startswith("application/json")
    return result


def ok_json(client: TestClient, path: str, query: str = "") -> Any:
    result = get(client, path, query)
    assert result.status_code == 200, (path, query, result.text)
    return json.loads(result.content)


def by_id(records: Records, language: str, article_id: str) -> dict[str, Any]:
    (record,) = [r for r in records if r["language"] == language and r["id"] == article_id]
    return record


# -- list -----------------------------------------------------------------------------------


def test_list_defaults(client: TestClient, records: Records) -> None:
    body = ok_json(client, "/api/v1/en/articles")
    expected = expected_order(records, "en")
    assert set(body) == LIST_FIELDS
    assert body["page"] == 1
    assert body["page_size"] == 20
    assert body["total"] == len(expected) > 40
    assert body["total_pages"] == total_pages(len(expected), 20)
    assert body["items"] == expected[:20]
    for item in body["items"]:
        assert set(item) == ARTICLE_FIELDS


@pytest.mark.parametrize("language", LANGUAGES)
def test_list_whole_language_in_order(client: TestClient, records: Records, language: str) -> None:
    body = ok_json(client, f"/api/v1/{language}/articles", "page_size=100")
    expected = expected_order(records, language)
    assert body["items"] == expected
    assert body["total"] == len(expected)
    assert body["total_pages"] == total_pages(len(expected), 100)


@pytest.mark.parametrize("page_size", [1, 3, 7, 20, 53, 100])
def test_pages_concatenate_to_the_whole_list(
    client: TestClient, records: Records, page_size: int
) -> None:
    expected = expected_order(records, "en")
    pages = total_pages(len(expected), page_size)
    seen: list[dict[str, Any]] = []
    for page in range(1, pages + 1):
        body = ok_json(client, "/api/v1/en/articles", f"page={page}&page_size={page_size}")
        assert body["page"] == page
        assert body["page_size"] == page_size
        assert body["total"] == len(expected)
        assert body["total_pages"] == pages
        assert len(body["items"]) == min(page_size, len(expected) - (page - 1) * page_size)
        seen += body["items"]
    assert seen == expected


@pytest.mark.parametrize("page", ["4", "1000", "99999999999999999999", "1" + "0" * 1000])
def test_page_past_the_end(client: TestClient, records: Records, page: str) -> None:
    body = ok_json(client, "/api/v1/en/articles", f"page={page}")
    assert body["items"] == []
    assert body["total"] == len(expected_order(records, "en"))
    assert body["page"] == int(page)
    assert body["total_pages"] == total_pages(body["total"], 20)


def test_huge_page_with_category_and_search(client: TestClient) -> None:
    huge = "99999999999999999999"
    body = ok_json(client, "/api/v1/en/articles", f"page={huge}&category=politics")
    assert body["items"] == [] and body["total"] > 0 and body["page"] == int(huge)
    body = ok_json(client, "/api/v1/en/articles/search", f"q=title&page={huge}")
    assert body["items"] == [] and body["page"] == int(huge)


@pytest.mark.parametrize("language", EMPTY_LANGUAGES)
def test_language_without_articles(client: TestClient, language: str) -> None:
    body = ok_json(client, f"/api/v1/{language}/articles")
    assert body == {"items": [], "total": 0, "page": 1, "page_size": 20, "total_pages": 0}
    assert ok_json(client, f"/api/v1/{language}/articles/latest") == []
    assert ok_json(client, f"/api/v1/{language}/categories") == []
    body = ok_json(client, f"/api/v1/{language}/articles/search", "q=anything")
    assert body == {
        "items": [],
        "total": 0,
        "page": 1,
        "page_size": 20,
        "total_pages": 0,
        "facets": {"category": {}},
    }
    assert get(client, article_path(language, "en-001")).status_code == 404


def test_equal_timestamps_ordered_by_id(client: TestClient) -> None:
    body = ok_json(client, "/api/v1/en/articles", "page_size=100")
    ids = [item["id"] for item in body["items"]]
    ties = [i for i in ids if i.startswith("tie-")]
    assert ties == ["tie-a", "tie-b", "tie-c"]
    start = ids.index("tie-a")
    assert ids[start : start + 3] == ties  # adjacent: the same instant after normalisation
    stamps = {item["published_at"] for item in body["items"] if item["id"] in ties}
    assert stamps == {"2026-03-01T00:00:00Z"}


# -- category filter ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("language", "category"),
    [
        ("en", "politics"),
        ("en", "Politics"),
        ("en", "Économie"),
        ("en", "economy"),
        ("ko", "경제"),
        ("ja", "社会"),
        ("zh_tw", "經濟"),
        ("fr", "économie"),
    ],
)
def test_category_filter_exact(
    client: TestClient, records: Records, language: str, category: str
) -> None:
    expected = expected_order(records, language, category)
    assert expected  # the corpus has articles in this category
    body = ok_json(
        client, f"/api/v1/{language}/articles", f"category={quote(category)}&page_size=100"
    )
    assert body["items"] == expected
    assert body["total"] == len(expected)
    assert all(item["category"] == category for item in body["items"])


def test_category_filter_is_case_sensitive(client: TestClient, records: Records) -> None:
    lower = ok_json(client, "/api/v1/en/articles", "category=politics&page_size=100")
    upper = ok_json(client, "/api/v1/en/articles", "category=Politics&page_size=100")
    assert {i["id"] for i in lower["items"]}.isdisjoint({i["id"] for i in upper["items"]})
    for query in ("category=POLITICS", "category=politic", "category=%C3%A9conomie"):
        body = ok_json(client, "/api/v1/en/articles", query)
        assert body == {"items": [], "total": 0, "page": 1, "page_size": 20, "total_pages": 0}


def test_category_pagination(client: TestClient, records: Records) -> None:
    expected = expected_order(records, "en", "politics")
    body = ok_json(client, "/api/v1/en/articles", "category=politics&page=2&page_size=3")
    assert body["items"] == expected[3:6]
    assert body["total_pages"] == total_pages(len(expected), 3)
    past = ok_json(client, "/api/v1/en/articles", "category=politics&page=50&page_size=3")
    assert past["items"] == [] and past["total"] == len(expected)


def test_empty_category_means_no_filter(client: TestClient) -> None:
    unfiltered = ok_json(client, "/api/v1/en/articles", "page_size=30")
    assert ok_json(client, "/api/v1/en/articles", "category=&page_size=30") == unfiltered


def test_category_from_another_language_is_empty(client: TestClient) -> None:
    body = ok_json(client, "/api/v1/en/articles", f"category={quote('경제')}")
    assert body["total"] == 0 and body["items"] == []


# -- latest ---------------------------------------------------------------------------------


@pytest.mark.parametrize("language", POPULATED)
def test_latest_default_limit(client: TestClient, records: Records, language: str) -> None:
    body = ok_json(client, f"/api/v1/{language}/articles/latest")
    assert body == expected_summaries(records, language)[:10]
    for item in body:
        assert set(item) == SUMMARY_FIELDS


@pytest.mark.parametrize("limit", [1, 2, 10, 49, 50])
def test_latest_limit(client: TestClient, records: Records, limit: int) -> None:
    body = ok_json(client, "/api/v1/en/articles/latest", f"limit={limit}")
    assert body == expected_summaries(records, "en")[:limit]
    assert len(body) == limit  # en has more than 50 articles


def test_latest_limit_larger_than_language(client: TestClient, records: Records) -> None:
    body = ok_json(client, "/api/v1/ko/articles/latest", "limit=50")
    assert [item["id"] for item in body] == [a["id"] for a in expected_order(records, "ko")]


# -- get by id ------------------------------------------------------------------------------


def test_every_article_by_id(client: TestClient, records: Records) -> None:
    for record in records:
        result = get(client, article_path(record["language"], record["id"]))
        assert result.status_code == 200, record["id"]
        body = json.loads(result.content)
        assert body == expected_article(record, records)
        assert set(body) == ARTICLE_FIELDS


@pytest.mark.parametrize(
    ("language", "raw_path_id", "article_id"),
    [
        ("ko", "%EA%B2%BD%EC%A0%9C-%EB%89%B4%EC%8A%A4", KO_ID),
        ("ja", "%E6%97%A5%E6%9C%AC%E8%AA%9E", JA_ID),
        ("en", "hello%20world", "hello world"),
        ("en", "100%25", "100%"),
        ("en", "a+b", "a+b"),
        ("en", "a%2Bb", "a+b"),
        ("en", "latest-news", "latest-news"),
        ("en", "search-results", "search-results"),
        ("en", "12345", "12345"),
        ("en", "comments", "comments"),
        ("en", "what%3F%26%23frag", "what?&#frag"),
        ("en", "caf%C3%A9", NFC_CAFE),
        ("en", "cafe%CC%81", NFD_CAFE),
        ("en", "Hello", "Hello"),
        ("en", "hello", "hello"),
        ("ja", "%EF%BC%A1%EF%BC%A2%EF%BC%A3", "ＡＢＣ"),
        ("ja", "ABC", "ABC"),
    ],
)
def test_percent_decoded_lookup(
    client: TestClient, records: Records, language: str, raw_path_id: str, article_id: str
) -> None:
    body = ok_json(client, f"/api/v1/{language}/articles/{raw_path_id}")
    assert body == expected_article(by_id(records, language, article_id), records)


def test_unicode_variants_are_distinct_articles(client: TestClient) -> None:
    nfc = ok_json(client, article_path("en", NFC_CAFE))
    nfd = ok_json(client, article_path("en", NFD_CAFE))
    assert (nfc["id"], nfd["id"]) == (NFC_CAFE, NFD_CAFE)


def test_awkward_ids_are_all_articles(client: TestClient) -> None:
    for article_id in AWKWARD_EN_IDS:
        assert ok_json(client, article_path("en", article_id))["id"] == article_id


def test_reserved_segments_are_operations(client: TestClient) -> None:
    latest = ok_json(client, "/api/v1/en/articles/latest")
    assert isinstance(latest, list) and set(latest[0]) == SUMMARY_FIELDS
    search = ok_json(client, "/api/v1/en/articles/search", "q=title")
    assert set(search) == SEARCH_FIELDS
    # latest-news is an article, not the latest operation.
    assert ok_json(client, "/api/v1/en/articles/latest-news")["id"] == "latest-news"


def test_same_id_in_two_languages(client: TestClient, records: Records) -> None:
    en = ok_json(client, article_path("en", "shared-id"))
    fr = ok_json(client, article_path("fr", "shared-id"))
    ko = ok_json(client, article_path("ko", "shared-id"))
    assert (en["language"], fr["language"], ko["language"]) == ("en", "fr", "ko")
    assert fr == expected_article(by_id(records, "fr", "shared-id"), records)
    assert en["title"] != fr["title"]


@pytest.mark.parametrize(
    ("language", "article_id"),
    [
        ("en", "no-such-article"),
        ("en", KO_ID),  # exists only in ko
        ("ko", JA_ID),  # exists only in ja
        ("fr", "en-001"),
        ("en", "hello+world"),  # '+' is not a space in a path
        ("en", "HELLO"),
        ("en", "cafe"),
        ("ja", "abc"),
        ("en", "Latest"),
        ("en", "x" * 300),
    ],
)
def test_unknown_id_is_404(client: TestClient, language: str, article_id: str) -> None:
    result = get(client, article_path(language, article_id))
    assert result.status_code == 404
    assert json.loads(result.content) == {"detail": "Article not found"}


def test_encoded_slash_id_is_404(client: TestClient) -> None:
    result = client.simulate_get("/api/v1/en/articles/a%2Fb")
    assert result.status_code == 404
    assert json.loads(result.content)["detail"] in ("Article not found", "Not Found")


# -- categories -----------------------------------------------------------------------------


@pytest.mark.parametrize("language", LANGUAGES)
def test_categories_code_point_order(client: TestClient, records: Records, language: str) -> None:
    body = ok_json(client, f"/api/v1/{language}/categories")
    assert body == expected_categories(records, language)


def test_categories_en_is_not_locale_sorted(client: TestClient) -> None:
    assert ok_json(client, "/api/v1/en/categories") == [
        "Politics",
        "economy",
        "politics",
        "world",
        "Économie",
    ]
    assert ok_json(client, "/api/v1/ko/categories") == ["IT", "경제", "정치"]


# -- encoding -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("path", "query", "text"),
    [
        (article_path("ko", KO_ID), "", KO_ID),
        ("/api/v1/ko/articles", "", "한국 경제 성장률 발표"),
        ("/api/v1/ko/categories", "", "경제"),
        ("/api/v1/ja/articles/latest", "", "日本経済は回復へ"),
        ("/api/v1/zh_tw/articles", "", "臺灣經濟成長"),
        (article_path("en", NFD_CAFE), "", NFD_CAFE),
        ("/api/v1/en/categories", "", "Économie"),
    ],
)
def test_non_ascii_emitted_raw(client: TestClient, path: str, query: str, text: str) -> None:
    result = get(client, path, query)
    assert result.status_code == 200
    assert text.encode("utf-8") in result.content
    assert b"\\u" not in result.content
    result.content.decode("utf-8")  # valid UTF-8 throughout
