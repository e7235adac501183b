"""The wire models (app/models/) against the hand-written fast paths that must match them.

- The builder serialises articles with the models: the bytes are those of the plain JSON
  the bundle always held (orjson of the same fields), so bundles stay byte-identical.
- app/params.list_body writes the ArticleList/CommentList envelope by hand, for speed: it
  must equal the model's own serialisation.
- Query integers follow the documented rule (plain base-10 digits, optional sign), the
  oracle being that rule written as a regular expression.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta
from typing import Any

import falcon.testing
import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic_core import PydanticKnownError

from app import models, params
from app.builder.compile import article_json, summary_json
from app.builder.records import parse_record
from app.comments import comment_wire as cw
from app.errors import APIError
from app.models.common import _base10
from app.timestamps import format_timestamp, parse_timestamp
from tests.helpers import good

text = st.text(st.characters(exclude_categories=("Cs",)), min_size=1).filter(str.strip)


AI = {"trainedAlgorithmicMedia", "compositeWithTrainedAlgorithmicMedia"}


def plain_provenance(source: dict[str, Any] | None) -> dict[str, Any]:
    """docs/api.md §11, written out: the defaults, the URI, `ai_generated`, `reviewed`."""
    source = source or {}
    kind = source.get("source_type") or "trainedAlgorithmicMedia"
    reviewed = None
    if source.get("reviewed_by") is not None:
        at = format_timestamp(parse_timestamp(source["reviewed_at"]))
        reviewed = {"by": source["reviewed_by"], "at": at}
    return {
        "source_type": kind,
        "source_type_uri": "http://cv.iptc.org/newscodes/digitalsourcetype/" + kind,
        "ai_generated": kind in AI,
        "generator": source.get("generator"),
        "reviewed": reviewed,
        "sources": source.get("sources") or [],
    }


def plain_article(record: dict[str, Any]) -> bytes:
    """The bundle's article record as it was written before the models existed, with the
    fields of version 1.2."""
    a = parse_record(record, "x:1")
    corrections = sorted(
        ((parse_timestamp(c["at"]), c["text"]) for c in record.get("corrections") or []),
        key=lambda c: c[0],
    )
    updated = max([a.published, *(at for at, _ in corrections)])
    if record.get("updated_at"):
        updated = max(updated, parse_timestamp(record["updated_at"]))
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
            "updated_at": format_timestamp(updated),
            "translations": dict(a.translations),
            "provenance": plain_provenance(record.get("provenance")),
            "corrections": [{"at": format_timestamp(at), "text": t} for at, t in corrections],
        }
    )


source_types = st.sampled_from(
    [
        None,
        "trainedAlgorithmicMedia",
        "compositeWithTrainedAlgorithmicMedia",
        "algorithmicMedia",
        "digitalCreation",
    ]
)
provenances = st.none() | st.fixed_dictionaries(
    {},
    optional={
        "source_type": source_types,
        "generator": st.none() | text,
        "sources": st.lists(st.sampled_from(["https://a.example/x", "http://b.example"])),
    },
)
reviews = st.none() | st.tuples(text, st.datetimes(timezones=st.just(UTC)))
correction_lists = st.lists(
    st.tuples(st.integers(0, 10**6), text.filter(lambda t: len(t) <= 1000)), max_size=3
)


@settings(max_examples=200)
@given(
    title=text,
    tags=st.lists(st.text(st.characters(exclude_categories=("Cs",)))),
    author=st.none() | text,
    published=st.datetimes(timezones=st.timezones()).map(lambda d: d.isoformat()),
    provenance=provenances,
    review=reviews,
    corrections=correction_lists,
)
def test_article_bytes_are_the_plain_json(
    title: str,
    tags: list[str],
    author: str | None,
    published: str,
    provenance: dict[str, Any] | None,
    review: tuple[str, datetime] | None,
    corrections: list[tuple[int, str]],
) -> None:
    record = good(title=title, tags=tags, author=author)
    record["published_at"] = published
    if review is not None:
        provenance = {**(provenance or {}), "reviewed_by": review[0]}
        provenance["reviewed_at"] = review[1].isoformat()
    if provenance is not None:
        record["provenance"] = provenance
    try:
        start = parse_timestamp(published)
    except ValueError:
        return
    record["corrections"] = [
        {"at": (start + timedelta(seconds=s)).isoformat(), "text": t} for s, t in corrections
    ]
    try:
        expected = plain_article(record)
    except Exception:
        return  # out of range once normalised to UTC: the builder refuses it (tested elsewhere)
    article = parse_record(record, "x:1")
    assert article_json(article) == expected
    summary = orjson.loads(summary_json(article))
    assert list(summary) == list(models.ArticleSummary.model_fields)
    plain = orjson.loads(expected)
    plain["ai_generated"] = plain["provenance"]["ai_generated"]
    assert summary == {k: plain[k] for k in summary}


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


@settings(max_examples=500)
@given(raw=st.text(st.sampled_from("0123456789+-_ .١²"), max_size=40))
def test_base10_converts_exactly_the_plain_digits(raw: str) -> None:
    # Both of its paths: up to 18 unsigned ASCII digits by int() alone, the rest digit-checked.
    if BASE10.fullmatch(raw):
        assert _base10(raw) == int(raw)
    else:
        with pytest.raises(PydanticKnownError):
            _base10(raw)


@pytest.mark.parametrize(
    ("model", "given_", "loc"),
    [
        (models.SearchQuery, {}, ["query", "q"]),
        (cw.CommentCountsQuery, {"article_id": ["a"] * 101}, ["query", "article_id"]),
        (cw.CommentListQuery, {"order": "sideways"}, ["query", "order"]),
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
