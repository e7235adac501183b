"""The wire models (app/models.py) against the hand-written fast paths that must match them.

- The builder serialises articles with the models: the bytes are those of the plain JSON
  the bundle always held (orjson of the same fields), so bundles stay byte-identical.
- app/params.list_body writes the ArticleList/CommentList envelope by hand, for speed: it
  must equal the model's own serialisation.
- Query integers follow the documented rule (plain base-10 digits, optional sign), the
  oracle being that rule written as a regular expression.
"""

from __future__ import annotations

import re
from typing import Any

import falcon.testing
import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from app import models, params
from app.build.compile import article_json, summary_json
from app.build.records import parse_record
from app.errors import APIError
from tests.helpers import good

text = st.text(st.characters(exclude_categories=("Cs",)), min_size=1).filter(str.strip)


def plain_article(record: dict[str, Any]) -> bytes:
    """The bundle's article record as it was written before the models existed."""
    a = parse_record(record, "x:1")
    return orjson.dumps(
        {
            "id": a.id,
            "language": a.language,
            "title": a.title,
            "summary": a.summary,
            "content": a.content,
            "category": a.category,
            "tags": list(a.tags),
            "author": a.author,
            "image_url": a.image_url,
            "published_at": a.published_at,
            "updated_at": a.updated_at,
            "translations": dict(a.translations),
        }
    )


@settings(max_examples=200)
@given(
    title=text,
    tags=st.lists(st.text(st.characters(exclude_categories=("Cs",)))),
    author=st.none() | text,
    published=st.datetimes(timezones=st.timezones()).map(lambda d: d.isoformat()),
)
def test_article_bytes_are_the_plain_json(
    title: str, tags: list[str], author: str | None, published: str
) -> None:
    record = good(title=title, tags=tags, author=author)
    record["published_at"] = published
    try:
        expected = plain_article(record)
    except Exception:
        return  # out of range once normalised to UTC: the builder refuses it (tested elsewhere)
    article = parse_record(record, "x:1")
    assert article_json(article) == expected
    summary = orjson.loads(summary_json(article))
    assert list(summary) == list(models.ArticleSummary.model_fields)
    assert summary == {k: orjson.loads(expected)[k] for k in summary}


@settings(max_examples=100)
@given(
    total=st.integers(0, 10**6),
    page=st.integers(1, 10**30),
    page_size=st.integers(1, models.PAGE_SIZE_MAX),
    count=st.integers(0, 3),
)
def test_list_envelope_is_the_models_serialisation(
    total: int, page: int, page_size: int, count: int
) -> None:
    article = parse_record(good(), "x:1")
    items = [article_json(article)] * count
    query = models.PageQuery(page=page, page_size=page_size)
    expected = models.ArticleList(
        items=[models.Article.model_validate_json(item) for item in items],
        total=total,
        page=page,
        page_size=page_size,
        total_pages=-(-total // page_size),
    ).model_dump_json()
    assert params.list_body(query, items, total) == expected.encode()


def test_a_page_of_any_size_is_written_exactly() -> None:
    digits = "9" * 9000
    req = falcon.testing.create_req(query_string=f"page={digits}")
    query = params.parse(req, models.ArticleListQuery)
    body = params.list_body(query, [], 0)
    assert body == b'{"items":[],"total":0,"page":%b,"page_size":20,"total_pages":0}' % (
        digits.encode()
    )


BASE10 = re.compile(r"[+-]?[0-9]+")


@settings(max_examples=300)
@given(raw=st.text(st.sampled_from("0123456789+-_ .eE١x")) | st.text(max_size=6))
def test_query_integers_are_plain_base10(raw: str) -> None:
    req = falcon.testing.create_req(query_string="page_size=" + falcon.uri.encode_value(raw))
    expected_ok = bool(BASE10.fullmatch(raw)) and 1 <= int(raw) <= models.PAGE_SIZE_MAX
    try:
        query = params.parse(req, models.ArticleListQuery)
    except APIError as error:
        assert not expected_ok, raw
        (item,) = error.detail
        assert set(item) == {"type", "loc", "msg"}
        assert item["loc"] == ["query", "page_size"]
        return
    assert expected_ok, raw
    assert query.page_size == int(raw)


@pytest.mark.parametrize(
    ("model", "given_", "loc"),
    [
        (models.SearchQuery, {}, ["query", "q"]),
        (models.CommentCountsQuery, {"article_id": ["a"] * 101}, ["query", "article_id"]),
        (models.CommentListQuery, {"order": "sideways"}, ["query", "order"]),
    ],
)
def test_422_items_come_from_pydantic(model: Any, given_: dict[str, Any], loc: list[str]) -> None:
    query = "&".join(
        f"{k}={v}" for k, vs in given_.items() for v in (vs if isinstance(vs, list) else [vs])
    )
    with pytest.raises(APIError) as caught:
        params.parse(falcon.testing.create_req(query_string=query), model)
    (item,) = caught.value.detail
    assert item["loc"] == loc and item["type"] in {"missing", "too_long", "enum"}
