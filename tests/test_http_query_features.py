"""Query features of docs/api.md §7 on list and search: from/to, order, fields, category
on search, facets. Expectations are computed here from the source records."""

from __future__ import annotations

import html
import json
from collections import Counter
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from falcon.testing import TestClient
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.helpers import expected_article, expected_summary

Records = list[dict[str, Any]]
LIST = "/api/v1/en/articles"
SEARCH = "/api/v1/en/articles/search"


def instant(text: str) -> datetime:
    return datetime.fromisoformat(text).astimezone(UTC)


def lower_bound(text: str) -> datetime:
    if len(text) == 10:
        return datetime.fromisoformat(text).replace(tzinfo=UTC)
    return instant(text)


def upper_bound(text: str) -> datetime:
    """Inclusive: a date alone covers its whole UTC day (up to its last microsecond)."""
    if len(text) == 10:
        return lower_bound(text) + timedelta(days=1) - timedelta(microseconds=1)
    return instant(text)


def oracle(
    records: Records,
    *,
    start: str | None = None,
    end: str | None = None,
    order: str = "newest",
    category: str | None = None,
    ids: set[str] | None = None,
) -> list[dict[str, Any]]:
    chosen = [
        r
        for r in records
        if r["language"] == "en"
        and (start is None or instant(r["published_at"]) >= lower_bound(start))
        and (end is None or instant(r["published_at"]) <= upper_bound(end))
        and (category is None or r["category"] == category)
        and (ids is None or r["id"] in ids)
    ]
    by_id = sorted(chosen, key=lambda r: r["id"])
    return sorted(
        by_id, key=lambda r: instant(r["published_at"]), reverse=order == "newest"
    )  # stable: ids ascending within equal instants in both orders


def fetch(client: TestClient, path: str, **query: Any) -> Any:
    result = client.simulate_get(path, params={k: str(v) for k, v in query.items()})
    assert result.status_code == 200, result.text
    return json.loads(result.content)


def every_page(client: TestClient, path: str, page_size: int, **query: Any) -> list[Any]:
    items: list[Any] = []
    page = 1
    while True:
        body = fetch(client, path, page=page, page_size=page_size, **query)
        items += body["items"]
        if page >= body["total_pages"]:
            assert len(items) == body["total"]
            return items
        page += 1


RANGES = [
    ("2026-03-01", "2026-03-01"),  # the three tied articles, all at 2026-03-01T00:00:00Z
    ("2026-03-01T09:00:00+09:00", "2026-02-28T19:00:00-05:00"),  # that instant, two offsets
    ("2026-03-01T00:00:00.000001Z", None),  # just after the tie: excludes it
    (None, "2026-02-28"),  # date-only `to`: its whole UTC day, not the tie on the next day
    ("2025-01-05", "2025-01-20T12:00:00+05:30"),
    ("2026-01-01", None),
    (None, "2024-12-31"),  # nothing
    (None, None),
]


@pytest.mark.parametrize(("start", "end"), RANGES)
@pytest.mark.parametrize("order", ["newest", "oldest"])
@pytest.mark.parametrize("category", [None, "economy"])
def test_list_date_range_and_order(
    client: TestClient,
    records: Records,
    start: str | None,
    end: str | None,
    order: str,
    category: str | None,
) -> None:
    query = {k: v for k, v in (("from", start), ("to", end), ("category", category)) if v}
    expected = oracle(records, start=start, end=end, order=order, category=category)
    got = every_page(client, LIST, 3, order=order, **query)
    assert got == [expected_article(r, records) for r in expected]
    summaries = every_page(client, LIST, 7, order=order, fields="summary", **query)
    assert summaries == [expected_summary(r) for r in expected]


def test_ties_order_by_id_in_both_orders(client: TestClient) -> None:
    window = {"from": "2026-03-01", "to": "2026-03-01"}
    for order in ("newest", "oldest"):
        body = fetch(client, LIST, order=order, **window)
        assert [a["id"] for a in body["items"]] == ["tie-a", "tie-b", "tie-c"]


def test_summary_page_is_the_latest_bytes(client: TestClient) -> None:
    latest = client.simulate_get("/api/v1/en/articles/latest", params={"limit": "50"}).content
    page = client.simulate_get(LIST, params={"page_size": "50", "fields": "summary"}).content
    assert page.startswith(b'{"items":' + latest + b',"total":')


def test_defaults_spelled_out_keep_body_and_etag(client: TestClient) -> None:
    plain = client.simulate_get(LIST, params={"page_size": "5"})
    spelled = client.simulate_get(
        LIST, params={"page_size": "5", "order": "newest", "fields": "full"}
    )
    assert plain.content == spelled.content and plain.headers["etag"] == spelled.headers["etag"]
    oldest = client.simulate_get(LIST, params={"page_size": "5", "order": "oldest"})
    summary = client.simulate_get(LIST, params={"page_size": "5", "fields": "summary"})
    dated = client.simulate_get(LIST, params={"page_size": "5", "from": "2025-01-01"})
    etags = {r.headers["etag"] for r in (plain, oldest, summary, dated)}
    assert len(etags) == 4


# -- search ---------------------------------------------------------------------------------

WORDS = ["paragraph", "title", "summary", "second", "economy", "jane", "first"]


def matched_ids(client: TestClient, q: str) -> set[str]:
    return {a["id"] for a in every_page(client, SEARCH, 100, q=q)}


@pytest.mark.parametrize(("start", "end"), RANGES)
@pytest.mark.parametrize("order", ["newest", "oldest"])
def test_search_filters_and_orders(
    client: TestClient, records: Records, start: str | None, end: str | None, order: str
) -> None:
    ids = matched_ids(client, "paragraph")
    assert len(ids) > 40
    dates = {k: v for k, v in (("from", start), ("to", end)) if v}
    for category in (None, "economy", "Politics", "no-such"):
        query = dict(dates, **({"category": category} if category else {}))
        expected = oracle(records, start=start, end=end, order=order, category=category, ids=ids)
        got = every_page(client, SEARCH, 4, q="paragraph", order=order, **query)
        assert got == [expected_article(r, records) for r in expected]
        body = fetch(client, SEARCH, q="paragraph", fields="summary", page_size=100, **query)
        assert {a["id"] for a in body["items"]} == {r["id"] for r in expected}
        assert all(set(a) == set(expected_summary(records[0])) for a in body["items"])
        # Facets count q + from + to, whatever the category.
        in_range = oracle(records, start=start, end=end, ids=ids)
        assert body["facets"] == {"category": dict(Counter(r["category"] for r in in_range))}


def test_search_relevance_page_unchanged_by_default_filters(client: TestClient) -> None:
    plain = fetch(client, SEARCH, q="title", page_size=100)
    spelled = fetch(client, SEARCH, q="title", page_size=100, order="relevance", fields="full")
    assert plain == spelled
    wide = fetch(client, SEARCH, q="title", page_size=100, **{"from": "1970-01-01"})
    assert wide["items"] == plain["items"]


def test_facet_keys_in_code_point_order_without_zeros(client: TestClient) -> None:
    facets = fetch(client, SEARCH, q="paragraph")["facets"]["category"]
    assert list(facets) == sorted(facets) and all(count > 0 for count in facets.values())


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    q=st.lists(st.sampled_from(WORDS), min_size=1, max_size=2).map(" ".join),
    start=st.none() | st.dates(datetime(2025, 1, 1).date(), datetime(2026, 4, 30).date()),
    days=st.none() | st.integers(0, 120),
)
def test_facets_sum_to_total_and_match_category_totals(
    client: TestClient, q: str, start: Any, days: int | None
) -> None:
    query: dict[str, Any] = {"q": q}
    if start is not None:
        query["from"] = start.isoformat()
        if days is not None:
            query["to"] = (start + timedelta(days=days)).isoformat()
    body = fetch(client, SEARCH, **query)
    facets = body["facets"]["category"]
    assert sum(facets.values()) == body["total"]
    for category, count in facets.items():
        assert fetch(client, SEARCH, category=category, **query)["total"] == count


# -- highlight=true (docs/search.md "Highlights") -----------------------------------------


def unmarked(text: str) -> str:
    return html.unescape(text.replace("<mark>", "").replace("</mark>", ""))


@pytest.mark.parametrize("fields", ["full", "summary"])
@pytest.mark.parametrize(
    "q", ["paragraph", "title", "paragraph -hello", "hello OR paragraph", '"second paragraph"']
)
def test_highlights_align_with_items(
    client: TestClient, records: Records, q: str, fields: str
) -> None:
    plain = client.simulate_get(SEARCH, params={"q": q, "page_size": "7", "fields": fields})
    marked = client.simulate_get(
        SEARCH, params={"q": q, "page_size": "7", "fields": fields, "highlight": "true"}
    )
    assert marked.status_code == 200
    body, before = marked.json, plain.json
    assert "highlights" not in before and before["items"]
    # Everything else is the page it was; the highlights are one per item, in order.
    assert {k: v for k, v in body.items() if k != "highlights"} == before
    assert [h["id"] for h in body["highlights"]] == [a["id"] for a in body["items"]]
    by_id = {r["id"]: r for r in records if r["language"] == "en"}
    for h in body["highlights"]:
        record = by_id[h["id"]]
        assert unmarked(h["title"]) == record["title"]
        snippet = unmarked(h["snippet"])
        assert snippet in record["summary"] or snippet in record["content"]
        assert len(snippet) <= 240
    assert any("<mark>" in h["snippet"] or "<mark>" in h["title"] for h in body["highlights"])
    # Its own ETag: a cache never answers one form with the other.
    assert marked.headers["etag"] != plain.headers["etag"]


def test_highlight_false_is_the_plain_page(client: TestClient) -> None:
    plain = client.simulate_get(SEARCH, params={"q": "title"})
    off = client.simulate_get(SEARCH, params={"q": "title", "highlight": "false"})
    assert off.content == plain.content and off.headers["etag"] == plain.headers["etag"]


@pytest.mark.parametrize("value", ["banana", "", "2"])
def test_highlight_must_be_a_boolean(client: TestClient, value: str) -> None:
    result = client.simulate_get(SEARCH, params={"q": "title", "highlight": value})
    assert result.status_code == 422
    assert [e["loc"] for e in result.json["detail"]] == [["query", "highlight"]]
