"""The shapes of search: its query parameters, results, facets and highlights
(docs/search.md)."""

from __future__ import annotations

from enum import StrEnum
from typing import Annotated, Any

from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    Field,
)

from app.models.articles import CATEGORY_DOC, ArticleList
from app.models.common import FilterQuery, wire_config
from app.search.query import MAX_PHRASES, phrase_count

QUERY_MAX_CHARS = 200


class SearchFacets(BaseModel):
    """Counts over the matches of `q`, `from` and `to`, ignoring `category`."""

    model_config = wire_config()

    category: Annotated[
        dict[str, Annotated[int, Field(ge=1)]],
        Field(examples=[{"economy": 12, "politics": 3}]),
    ]
    """Matches per category, keys in code-point order; a category without matches is left
    out."""


class Highlight(BaseModel):
    """Where one item of a search page matched: HTML-escaped text, each match in
    `<mark>`...`</mark>` (docs/search.md, "Highlights")."""

    model_config = wire_config(frozen=True)

    id: Annotated[str, Field(examples=["en-2026-11-central-bank-rates"])]
    """The item's article id."""
    title: Annotated[str, Field(examples=["Central Bank Holds <mark>Rates</mark> Steady"])]
    """The whole title."""
    snippet: Annotated[str, Field(examples=["The bank kept its <mark>rate</mark> at 3.5%."])]
    """At most 240 characters (before escaping and marks) of the summary, or of the content
    when the summary holds no match, around the first match."""


def _highlights_only_when_asked(schema: dict[str, Any]) -> None:
    # `highlights` is written with highlight=true only: not required, and no default.
    schema["required"] = [name for name in schema.get("required", []) if name != "highlights"]
    schema["properties"]["highlights"].pop("default", None)


class SearchResults(ArticleList):
    """A page of search results, with facets over every match."""

    model_config = wire_config(json_schema_extra=_highlights_only_when_asked)

    facets: SearchFacets
    highlights: list[Highlight] = Field(default_factory=list)
    """With `highlight=true` only: one entry per item, in the same order."""


class SearchOrder(StrEnum):
    """Order of search results."""

    relevance = "relevance"
    newest = "newest"
    oldest = "oldest"


def _trim(value: Any) -> Any:
    return value.strip() if isinstance(value, str) else value


def _phrases_bounded(value: str) -> str:
    if (count := phrase_count(value)) > MAX_PHRASES:
        raise ValueError(f"q holds {count} phrases; at most {MAX_PHRASES} are allowed")
    return value


class SearchQuery(FilterQuery):
    # Declared first so its errors come first; `page` and `page_size` follow.
    q: Annotated[
        str,
        Field(
            min_length=1,
            max_length=QUERY_MAX_CHARS,
            # Trimming removes what str.isspace() calls space, which includes U+001C-U+001F
            # and U+0085 beyond the pattern language's \s: the document says so, so that a
            # client (or a fuzzer) knows "\x1d" alone is empty.
            pattern=r"[^\s\x1c-\x1f\x85]",
            description='Keywords, all of which must match; `"a phrase"`, `-excluded` and'
            " `a OR b` (binding tighter than the implicit AND) work in every language."
            f" Trimmed, then 1 to {QUERY_MAX_CHARS} characters, at least one of them not a"
            f" space; at most {MAX_PHRASES} quoted phrases.",
            examples=["economy"],
        ),
        BeforeValidator(_trim),
        AfterValidator(_phrases_bounded),
    ]
    category: Annotated[
        str | None,
        Field(
            description=CATEGORY_DOC + " Facets ignore it.",
            examples=["politics"],
        ),
    ] = None
    order: Annotated[
        SearchOrder,
        Field(
            description="`relevance` (default), `newest` (published_at descending) or"
            " `oldest` (ascending); ties by id ascending.",
            examples=["newest"],
        ),
    ] = SearchOrder.relevance
    highlight: Annotated[
        bool,
        Field(
            description="`true`: the response adds `highlights`, the title and a snippet of"
            " each item with every match in `<mark>`.",
            examples=[True],
        ),
    ] = False
