"""Pydantic v2 against msgspec for the wire models (docs/models.md): `make bench-models`.

Times, in one process, the two places a model library works:
- the read path: validating the query parameters of a list and a search request into typed
  values (what app/params.py does per request);
- the build path: validating one source article and serialising it as the bundle's record
  (what app/builder/records.py and app/builder/compile.py do per article).
msgspec comes with bench/requirements.txt (`make bench` installs it); the service does not use it.

    python bench/models_bench.py
"""

import sys
import timeit
from typing import Annotated, Literal

import orjson

from app import models
from app.builder.compile import article_json
from app.builder.records import parse_record
from app.timestamps import format_timestamp, parse_timestamp

LINE = orjson.dumps(
    {
        "id": "en-economy-0001",
        "language": "en",
        "title": "Markets steady as rates hold",
        "summary": "Central bank keeps rates; markets barely move.",
        "content": "Paragraph one.\n\nParagraph two, somewhat longer than the first. " * 20,
        "category": "economy",
        "tags": ["markets", "rates"],
        "author": "A. Writer",
        "image_url": None,
        "published_at": "2026-11-20T08:30:00+09:00",
    }
)
LIST_QUERY = {"page": "3", "page_size": "20"}
SEARCH_QUERY = {"q": "economy", "page": "2"}


try:
    import msgspec
except ImportError:  # not a dependency of the service
    msgspec = None
else:
    _Positive = Annotated[int, msgspec.Meta(ge=1)]
    _PageSize = Annotated[int, msgspec.Meta(ge=1, le=100)]

    class MsgspecListQuery(msgspec.Struct, frozen=True):
        page: _Positive = 1
        page_size: _PageSize = 20
        category: str | None = None

    class MsgspecSearchQuery(msgspec.Struct, frozen=True):
        q: Annotated[str, msgspec.Meta(min_length=1, max_length=200)]
        page: _Positive = 1
        page_size: _PageSize = 20

    class MsgspecArticle(msgspec.Struct):
        id: Annotated[str, msgspec.Meta(min_length=1, max_length=200)]
        language: Literal["ko", "en", "zh_cn", "zh_tw", "ja", "fr", "de", "es", "it"]
        title: str
        summary: str
        content: str
        category: str
        published_at: str
        tags: list[str] = []  # noqa: RUF012 (msgspec copies mutable defaults)
        author: str | None = None
        image_url: str | None = None
        updated_at: str | None = None


def per_call(fn, number: int = 20_000) -> float:
    """Microseconds per call, best of five."""
    return min(timeit.repeat(fn, number=number, repeat=5)) / number * 1e6


def msgspec_cases() -> dict[str, float] | None:
    if msgspec is None:
        return None
    encoder = msgspec.json.Encoder()

    def build() -> bytes:
        article = msgspec.json.decode(LINE, type=MsgspecArticle)
        # The same normalisation the project needs whatever the library.
        published = format_timestamp(parse_timestamp(article.published_at))
        article.published_at = article.updated_at = published
        return encoder.encode(article)

    return {
        "read: list query": per_call(
            lambda: msgspec.convert(LIST_QUERY, MsgspecListQuery, strict=False)
        ),
        "read: search query": per_call(
            lambda: msgspec.convert(SEARCH_QUERY, MsgspecSearchQuery, strict=False)
        ),
        "build: validate + serialise one article": per_call(build, 5_000),
    }


def pydantic_cases() -> dict[str, float]:
    return {
        "read: list query": per_call(lambda: models.ArticleListQuery.model_validate(LIST_QUERY)),
        "read: search query": per_call(lambda: models.SearchQuery.model_validate(SEARCH_QUERY)),
        "build: validate + serialise one article": per_call(
            lambda: article_json(parse_record(orjson.loads(LINE), "x:1")), 5_000
        ),
    }


def main() -> int:
    results = {"pydantic": pydantic_cases(), "msgspec": msgspec_cases()}
    print("| case | Pydantic µs | msgspec µs |")
    print("|---|---:|---:|")
    for case, value in results["pydantic"].items():
        other = results["msgspec"][case] if results["msgspec"] else float("nan")
        print(f"| {case} | {value:.2f} | {other:.2f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
