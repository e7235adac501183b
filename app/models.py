"""Every shape on the wire, declared once with Pydantic (docs/api.md; choice: docs/models.md).

From these classes come: the builder's validation and serialisation of articles
(app/build/records.py, app/build/compile.py), request validation and its 422 items
(app/params.py, app/comments/validation.py), and the components of /openapi.json
(app/openapi.py). A new field is one line here plus its test.

Field order is the order keys appear in response bodies.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Callable
from datetime import datetime
from enum import StrEnum
from typing import Annotated, Any, Generic, Literal, TypeVar

from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    PlainSerializer,
    StrictStr,
    ValidationInfo,
    WithJsonSchema,
    field_validator,
    model_validator,
)
from pydantic_core import PydanticKnownError

from app.bundle.format import MAX_ID_CHARS, RESERVED_IDS
from app.languages import LANGUAGES
from app.search.query import MAX_PHRASES, phrase_count
from app.timestamps import date_bound_us, format_timestamp, parse_timestamp

PAGE_SIZE_DEFAULT, PAGE_SIZE_MAX = 20, 100
LIMIT_DEFAULT, LIMIT_MAX = 10, 50
CHANGES_LIMIT_DEFAULT, CHANGES_LIMIT_MAX = 100, 1000
QUERY_MAX_CHARS = 200
AUTHOR_MAX = 80
CONTENT_MAX = 5000
COUNTS_MAX_IDS = 100
# Longer strings cannot be ids this service issued (article ids are bounded by the builder).
ID_MAX = MAX_ID_CHARS
# "Any page >= 1 is accepted, however large", but a request line (8190 bytes in gunicorn)
# cannot carry more digits than this; the bound keeps big-integer work small.
MAX_INT_DIGITS = 10_000
IDEMPOTENCY_KEY_MAX = 200

T = TypeVar("T")

Language = StrEnum("Language", {code: code for code in LANGUAGES})  # type: ignore[misc]
Language.__doc__ = "One of the nine language codes."


def _wire_config(title: str | None = None, **extra: Any) -> ConfigDict:
    # Response schemas are generated in serialisation mode: every field the server always
    # writes is required, defaults included.
    config = ConfigDict(
        extra="ignore",
        json_schema_serialization_defaults_required=True,
        use_attribute_docstrings=True,
    )
    if title:
        config["title"] = title
    config.update(extra)  # type: ignore[typeddict-item]
    return config


# -- timestamps --------------------------------------------------------------------------


def _timestamp(value: Any) -> datetime:
    if isinstance(value, datetime):
        return value
    if not isinstance(value, str):
        raise PydanticKnownError("string_type")
    return parse_timestamp(value)  # ValueError -> "Value error, ..."


_TIMESTAMP_SCHEMA = {"type": "string", "format": "date-time", "examples": ["2026-11-20T08:30:00Z"]}
Timestamp = Annotated[
    datetime,
    BeforeValidator(_timestamp),
    PlainSerializer(format_timestamp, return_type=str),
    WithJsonSchema(_TIMESTAMP_SCHEMA),
]
CommentTimestamp = Annotated[
    datetime,
    BeforeValidator(_timestamp),
    PlainSerializer(lambda v: format_timestamp(v, microseconds=True), return_type=str),
    WithJsonSchema({**_TIMESTAMP_SCHEMA, "examples": ["2026-11-20T08:30:00.123456Z"]}),
]


# -- articles ----------------------------------------------------------------------------


def _has_control(text: str) -> bool:
    return any(unicodedata.category(ch) == "Cc" for ch in text)


def _article_id(value: str) -> str:
    if len(value) > MAX_ID_CHARS:
        raise ValueError(f"is {len(value)} characters, the maximum is {MAX_ID_CHARS}")
    if "/" in value:
        raise ValueError(f"must not contain '/': {value!r}")
    if _has_control(value):
        raise ValueError(f"must not contain control characters: {value!r}")
    if value in RESERVED_IDS:
        raise ValueError(f"{value!r} is reserved (it names an operation)")
    if value in (".", ".."):
        raise ValueError(f"{value!r} cannot be addressed in a URL path")
    return value


def _not_blank(value: str) -> str:
    if not value.strip():
        raise ValueError("must not be blank")
    return value


ArticleId = Annotated[
    StrictStr,
    Field(min_length=1, description="Unique within its language.", examples=["ko-0001"]),
    AfterValidator(_article_id),
]
Text = Annotated[StrictStr, AfterValidator(_not_blank)]


# -- provenance, corrections, retractions (docs/api.md §11) --------------------------------

DIGITAL_SOURCE_TYPE_URI = "http://cv.iptc.org/newscodes/digitalsourcetype/"
SOURCES_MAX = 50
SOURCE_URL_MAX = 2048
NOTE_MAX = 1000


class SourceType(StrEnum):
    """The IPTC Digital Source Type terms that fit text."""

    trainedAlgorithmicMedia = "trainedAlgorithmicMedia"
    compositeWithTrainedAlgorithmicMedia = "compositeWithTrainedAlgorithmicMedia"
    algorithmicMedia = "algorithmicMedia"
    digitalCreation = "digitalCreation"


# Written (wholly or partly) by a trained model: what readers must be told (AI Act 50(4)).
AI_SOURCE_TYPES = frozenset(
    {SourceType.trainedAlgorithmicMedia, SourceType.compositeWithTrainedAlgorithmicMedia}
)


def _web_url(value: str) -> str:
    if len(value) > SOURCE_URL_MAX:
        raise ValueError(f"is {len(value)} characters, the maximum is {SOURCE_URL_MAX}")
    if any(ch.isspace() for ch in value) or _has_control(value):
        raise ValueError(f"must not contain spaces or control characters: {value!r}")
    scheme, sep, rest = value.partition("://")
    host = rest.split("/", 1)[0].split("?", 1)[0].split("#", 1)[0]
    if not sep or scheme.lower() not in ("http", "https") or not host:
        raise ValueError(f"must be an absolute http(s) URL: {value!r}")
    return value


SourceUrl = Annotated[StrictStr, AfterValidator(_web_url)]
Note = Annotated[StrictStr, Field(min_length=1, max_length=NOTE_MAX)]


class Review(BaseModel):
    """Who reviewed the article under editorial responsibility, and when."""

    model_config = _wire_config(frozen=True)

    by: str
    at: Timestamp


class Provenance(BaseModel):
    """How the article was made, in the IPTC Digital Source Type vocabulary."""

    model_config = _wire_config(frozen=True)

    source_type: SourceType
    source_type_uri: Annotated[
        str, Field(examples=[DIGITAL_SOURCE_TYPE_URI + "trainedAlgorithmicMedia"])
    ]
    """`http://cv.iptc.org/newscodes/digitalsourcetype/` followed by `source_type`."""
    ai_generated: bool
    """True for `trainedAlgorithmicMedia` and `compositeWithTrainedAlgorithmicMedia`."""
    generator: str | None
    """The model or system that wrote it, when the source names one."""
    reviewed: Review | None
    """Null when no person reviewed it."""
    sources: list[str]
    """Absolute http(s) URLs the article was written from (at most 50)."""


class Correction(BaseModel):
    """A public correction of an article."""

    model_config = _wire_config(frozen=True)

    at: Timestamp
    text: Note


class SourceProvenance(BaseModel):
    """`provenance` of a source line; every field optional."""

    model_config = ConfigDict(extra="ignore", frozen=True)

    source_type: Annotated[
        SourceType,
        BeforeValidator(lambda v: SourceType.trainedAlgorithmicMedia if v is None else v),
    ] = SourceType.trainedAlgorithmicMedia
    generator: StrictStr | None = None
    reviewed_by: Annotated[StrictStr, Field(min_length=1)] | None = None
    reviewed_at: Timestamp | None = None
    sources: Annotated[
        list[SourceUrl],
        Field(max_length=SOURCES_MAX),
        BeforeValidator(lambda v: [] if v is None else v),
    ] = []

    @model_validator(mode="after")
    def _review_whole(self) -> SourceProvenance:
        if (self.reviewed_by is None) != (self.reviewed_at is None):
            raise ValueError("reviewed_by and reviewed_at come together or not at all")
        return self

    def wire(self) -> Provenance:
        reviewed = None
        if self.reviewed_by is not None and self.reviewed_at is not None:
            reviewed = Review(by=self.reviewed_by, at=self.reviewed_at)
        return Provenance(
            source_type=self.source_type,
            source_type_uri=DIGITAL_SOURCE_TYPE_URI + self.source_type.value,
            ai_generated=self.source_type in AI_SOURCE_TYPES,
            generator=self.generator,
            reviewed=reviewed,
            sources=list(self.sources),
        )


DEFAULT_PROVENANCE = SourceProvenance().wire()


class Retraction(BaseModel):
    """`retracted` of a source line: the article is withdrawn with this notice."""

    model_config = ConfigDict(extra="ignore", frozen=True)

    at: Timestamp
    reason: Note


class Article(BaseModel):
    """A news article (get by id; items of ArticleList). Also the builder's source record:
    `tags`, `author`, `image_url` and `updated_at` may be left out of a source line."""

    model_config = _wire_config(strict=False)

    id: ArticleId
    language: Language
    title: Text
    summary: Text
    """One or two sentences."""
    content: Text
    """Body text, paragraphs separated by a blank line."""
    category: Text
    """As written in the source, e.g. `politics`, `경제`."""
    tags: Annotated[list[StrictStr], BeforeValidator(lambda v: [] if v is None else v)] = []
    author: StrictStr | None = None
    image_url: StrictStr | None = None
    published_at: Timestamp
    updated_at: Timestamp
    """Equals `published_at` when the article was never updated."""
    translations: dict[str, str] = Field(default={}, examples=[{"en": "en-0001"}])
    """The same story in the other languages: language code -> article id (`{}` when none).
    Set by the builder from `story_id`; a source line cannot set it."""
    provenance: Provenance = DEFAULT_PROVENANCE
    """How the article was made (always present; a source without it is
    `trainedAlgorithmicMedia`, not reviewed)."""
    corrections: list[Correction] = []
    """Public corrections, oldest first; `updated_at` is never earlier than the last."""

    @model_validator(mode="before")
    @classmethod
    def _never_updated(cls, data: Any) -> Any:
        if isinstance(data, dict) and data.get("updated_at") is None and "published_at" in data:
            return {**data, "updated_at": data["published_at"]}
        return data

    @field_validator("updated_at")
    @classmethod
    def _not_before_published(cls, value: datetime, info: ValidationInfo) -> datetime:
        published = info.data.get("published_at")
        if published is not None and value < published:
            raise ValueError("is earlier than published_at")
        return value


def _story_id(value: str) -> str:
    if len(value) > MAX_ID_CHARS:
        raise ValueError(f"is {len(value)} characters, the maximum is {MAX_ID_CHARS}")
    if _has_control(value):
        raise ValueError(f"must not contain control characters: {value!r}")
    return value


StoryId = Annotated[StrictStr, Field(min_length=1), AfterValidator(_story_id)]


class SourceArticle(Article):
    """One line of a source file (docs/api.md §6, §8): an Article without `translations`,
    which the builder derives, plus the optional `story_id` that links translations."""

    story_id: StoryId | None = None
    """Articles of different languages with the same story_id are one story."""
    # Pydantic re-declares the field with the looser source type; mypy sees a narrowed override.
    provenance: Annotated[
        SourceProvenance, BeforeValidator(lambda v: SourceProvenance() if v is None else v)
    ] = SourceProvenance()  # type: ignore[assignment]
    """How the article was made; missing: `trainedAlgorithmicMedia`."""
    corrections: Annotated[list[Correction], BeforeValidator(lambda v: [] if v is None else v)] = []
    retracted: Retraction | None = None
    """Withdrawn with a notice: served as 410 and nowhere else."""

    @field_validator("corrections", "retracted")
    @classmethod
    def _not_before_publishing(cls, value: Any, info: ValidationInfo) -> Any:
        published = info.data.get("published_at")
        notes = value if isinstance(value, list) else [] if value is None else [value]
        for note in notes:
            if published is not None and note.at < published:
                raise ValueError(f"`at` {format_timestamp(note.at)} is earlier than published_at")
        return value

    @model_validator(mode="before")
    @classmethod
    def _no_translations(cls, data: Any) -> Any:
        if isinstance(data, dict) and "translations" in data:
            return {k: v for k, v in data.items() if k != "translations"}
        return data


class ArticleSummary(BaseModel):
    """The short form of an article (latest)."""

    model_config = _wire_config()

    id: str
    language: Language
    title: str
    summary: str
    category: str
    image_url: str | None
    published_at: Timestamp
    ai_generated: bool
    """Written wholly or partly by a trained model (`provenance.ai_generated`)."""


class Page(BaseModel, Generic[T]):
    """The envelope of list, search and comment list; serialised by hand in app/params.py
    for speed, and checked against this declaration by tests."""

    model_config = _wire_config()

    items: list[T]
    total: Annotated[int, Field(ge=0)]
    """Items the request selects, over all pages."""
    page: Annotated[int, Field(ge=1)]
    page_size: Annotated[int, Field(ge=1, le=PAGE_SIZE_MAX)]
    total_pages: Annotated[int, Field(ge=0)]
    """ceil(total / page_size); 0 when total is 0."""


class ArticleList(Page[Article | ArticleSummary]):
    """A page of articles; a page past the end has no items and the true total. Items are
    Article objects, or ArticleSummary objects with `fields=summary`."""


class SearchFacets(BaseModel):
    """Counts over the matches of `q`, `from` and `to`, ignoring `category`."""

    model_config = _wire_config()

    category: Annotated[
        dict[str, Annotated[int, Field(ge=1)]],
        Field(examples=[{"economy": 12, "politics": 3}]),
    ]
    """Matches per category, keys in code-point order; a category without matches is left
    out."""


class Highlight(BaseModel):
    """Where one item of a search page matched: HTML-escaped text, each match in
    `<mark>`...`</mark>` (docs/search.md, "Highlights")."""

    model_config = _wire_config(frozen=True)

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

    model_config = _wire_config(json_schema_extra=_highlights_only_when_asked)

    facets: SearchFacets
    highlights: list[Highlight] = Field(default_factory=list)
    """With `highlight=true` only: one entry per item, in the same order."""


class CorrectionEntry(BaseModel):
    """One line of the public corrections log: a correction, or a retraction (whose `text`
    is its reason)."""

    model_config = _wire_config()

    article_id: str
    title: str
    kind: Literal["correction", "retraction"]
    at: Timestamp
    text: str


class CorrectionList(Page[CorrectionEntry]):
    """A page of a language's corrections log: `at` descending, then `article_id`, then
    `kind` (`correction` before `retraction`)."""


_CURSOR_EXAMPLE = "ATdBRGQVEQWHAQUAAAAAAAAAhONuXA"


class Change(BaseModel):
    """One item of the change feed: an article's state now, and the publish that made it."""

    model_config = _wire_config()

    id: Annotated[str, Field(examples=["en-0001"])]
    kind: Literal["upsert", "retracted", "removed"]
    """`upsert`: the article answers 200 now, with this `updated_at`; `retracted`: it answers
    410 with its notice; `removed`: it answers 404."""
    at: Timestamp
    """When the publish that recorded this change was built."""
    updated_at: Timestamp | None
    """The article's `updated_at` for an `upsert`; null for the other kinds."""


class ChangeList(BaseModel):
    """A page of the change feed, in publish order, each article at most once."""

    model_config = _wire_config()

    items: list[Change]
    next: Annotated[str, Field(examples=[_CURSOR_EXAMPLE])]
    """The cursor to ask with next (`since`); never null."""
    more: bool
    """Whether asking with `next` now would return items."""


RETRACTED_EXAMPLE: dict[str, Any] = {
    "detail": "Article retracted",
    "id": "en-0001",
    "title": "A title",
    "retracted_at": "2026-11-21T09:00:00Z",
    "reason": "The figures it reported were wrong.",
}


class RetractedArticle(BaseModel):
    """The 410 of a retracted article: the notice that replaces it."""

    model_config = _wire_config(json_schema_extra={"examples": [RETRACTED_EXAMPLE]})

    detail: Literal["Article retracted"]
    id: str
    title: str
    retracted_at: Timestamp
    reason: str


# -- comments ----------------------------------------------------------------------------


class Comment(BaseModel):
    """A reader's comment on one article in one language."""

    model_config = _wire_config(frozen=True)

    id: str
    article_id: str
    language: Language
    parent_id: str | None
    """The comment this one replies to, or null."""
    author: str
    content: str
    created_at: CommentTimestamp
    """RFC 3339 UTC with fractional seconds."""
    featured: bool = False
    """Picked out by a moderator."""
    edited_at: CommentTimestamp | None = None
    """When its author last edited it, or null."""


class CommentList(Page[Comment]):
    """A page of comments, newest first unless `order=oldest`."""


# The comment text rules of _comment_text as JSON Schema patterns, so that the document
# states exactly what the server accepts, no more and no less. The server counts length
# after trimming (and CRLF as one newline), so the pattern bounds the trimmed text and the
# schema carries no minLength or maxLength of the raw text. Character classes are spelled
# out rather than written \s, which ECMAScript and Python regexes read differently.
# Whitespace str.strip() removes that is not a rejected control character:
_SPACE = r"\u0020\u00a0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000"
# Control characters (Unicode Cc) are rejected, except tab and newline, and CR in CRLF:
_CONTROL = r"\x00-\x1f\x7f-\x9f"
_TEXT = rf"[^{_CONTROL}{_SPACE}]"  # a character trimming keeps
_BLANK = rf"(?:[\t\n{_SPACE}]|\r\n)"  # a character (or CRLF) trimming removes


def _trimmed_pattern(inner: str, most: int) -> str:
    """Text that is 1 to `most` characters once trimmed, whose inner characters are `inner`
    or kept ones."""
    return rf"^{_BLANK}*{_TEXT}(?:(?:{inner}|{_TEXT}){{0,{most - 2}}}{_TEXT})?{_BLANK}*$"


def _schema_pattern(pattern: str) -> Callable[[dict[str, Any]], None]:
    def edit(schema: dict[str, Any]) -> None:
        schema.pop("minLength", None)
        schema.pop("maxLength", None)
        schema["pattern"] = pattern

    return edit


# Author: one line (tab, newline and CRLF only around the name). Content: any text.
COMMENT_AUTHOR_PATTERN = _trimmed_pattern(f"[{_SPACE}]", AUTHOR_MAX)
COMMENT_CONTENT_PATTERN = _trimmed_pattern(_BLANK, CONTENT_MAX)
# parent_id: the server looks up no id holding NUL (comments.validation.plausible_id).
PARENT_ID_PATTERN = r"^[^\x00]*$"


def _comment_text(single_line: bool) -> tuple[Any, Any]:
    """The Field (lengths, and the pattern that states them in the schema) and the validator
    of the author (`single_line`) or the content of a comment."""
    if single_line:
        most, pattern = AUTHOR_MAX, COMMENT_AUTHOR_PATTERN
        lines = "on one line; no control characters."
    else:
        most, pattern = CONTENT_MAX, COMMENT_CONTENT_PATTERN
        lines = "no control characters but tab and newline (CRLF counts as a newline)."
    field = Field(
        min_length=1,
        max_length=most,
        json_schema_extra=_schema_pattern(pattern),
        description=f"1 to {most} characters after trimming{',' if single_line else ';'} {lines}",
    )
    return field, comment_cleaner(single_line)


def free_text_field(most: int) -> Any:
    """The Field of a free text (a note, an explanation, a report's text): 1 to `most`
    characters after trimming and NFC, no control characters but tab and newline, as a
    comment's content; its schema states the rule as a pattern, like the content's."""
    return Field(
        min_length=1,
        max_length=most,
        json_schema_extra=_schema_pattern(_trimmed_pattern(_BLANK, most)),
        description=f"1 to {most} characters after trimming; no control characters but tab"
        " and newline.",
    )


def comment_cleaner(single_line: bool) -> Any:
    def clean(raw: Any) -> Any:
        if not isinstance(raw, str):
            return raw  # the strict string check names the type
        # CRLF is how many clients write a newline; a lone CR stays a rejected control.
        value = raw.replace("\r\n", "\n")
        if any(unicodedata.category(ch) == "Cc" and ch not in "\n\t" for ch in value):
            raise ValueError("control characters are not allowed")
        value = unicodedata.normalize("NFC", value).strip()
        if single_line and ("\n" in value or "\t" in value):
            raise ValueError("must be a single line")
        return value

    return BeforeValidator(clean)


class CommentCreate(BaseModel):
    """Lengths count characters after trimming and NFC normalisation; control characters
    other than newline and tab are rejected, and the author must be a single line. Unknown
    fields are ignored."""

    model_config = _wire_config(
        json_schema_extra={"examples": [{"author": "Mina", "content": "Well written."}]}
    )

    # The patterns are the document's statement of _comment_text and of the lengths (only
    # in the schema: the validator enforces the rule itself, with the precise message).
    author: Annotated[StrictStr, *_comment_text(single_line=True)]
    content: Annotated[StrictStr, *_comment_text(single_line=False)]
    parent_id: (
        Annotated[
            StrictStr,
            Field(
                min_length=1,
                max_length=ID_MAX,
                json_schema_extra={"pattern": PARENT_ID_PATTERN},
            ),
        ]
        | None
    ) = None
    """A comment of the same article to reply to (a 422 when it is not one)."""


class CommentCount(BaseModel):
    """How many comments the list of one article holds in total."""

    model_config = _wire_config()

    article_id: str
    language: Language
    count: Annotated[int, Field(ge=0)]


class CommentCounts(BaseModel):
    """Comment counts of several articles; null for an id that is not an article."""

    model_config = _wire_config()

    language: Language
    counts: dict[str, Annotated[int, Field(ge=0)] | None]


ArticleIds = Annotated[
    list[StrictStr],
    Field(
        min_length=1,
        max_length=COUNTS_MAX_IDS,
        description=f"1 to {COUNTS_MAX_IDS} article ids.",
        examples=[["ko-0001", "ko-0002"]],
    ),
]


class CommentCountsRequest(BaseModel):
    """The body of the POST form of batch counts, for many or long ids."""

    model_config = _wire_config()

    article_ids: ArticleIds


# -- errors and operations ---------------------------------------------------------------


class Error(BaseModel):
    """Every error other than 422."""

    model_config = _wire_config(json_schema_extra={"examples": [{"detail": "Article not found"}]})

    detail: str


class ValidationErrorItem(BaseModel):
    """One problem with a request: where (`loc`), what (`msg`), and its stable `type`."""

    model_config = _wire_config()

    type: str
    """Pydantic's error type, e.g. `int_parsing`, `missing`, `string_too_long`."""
    loc: list[str | int]
    """`query`, `path`, `header` or `body`, then the parameter or field name."""
    msg: str


class ValidationError(BaseModel):
    """A 422: every problem found in the request's parameters or body."""

    model_config = _wire_config(
        json_schema_extra={
            "examples": [
                {
                    "detail": [
                        {
                            "type": "greater_than_equal",
                            "loc": ["query", "page"],
                            "msg": "Input should be greater than or equal to 1",
                        }
                    ]
                }
            ]
        }
    )

    detail: list[ValidationErrorItem]


class Health(BaseModel):
    """The process answers."""

    model_config = _wire_config()

    status: Literal["ok"]


class Ready(BaseModel):
    """The bundle is loaded and the comment store answers."""

    # `rejected_bundle` is written only when there is one.
    model_config = _wire_config(json_schema_serialization_defaults_required=False)

    status: Literal["ready"]
    bundle: str
    """Id of the bundle being served."""
    rejected_bundle: str | None = None
    """Set when a newer bundle was refused; the named bundle keeps serving."""


class OpenAPIDocument(BaseModel):
    """An OpenAPI 3.1 document (https://spec.openapis.org/oas/v3.1.0)."""

    model_config = _wire_config(extra="allow")

    openapi: str
    info: dict[str, Any]
    paths: dict[str, Any]
    components: dict[str, Any]


# -- query parameters --------------------------------------------------------------------


def _base10(value: Any) -> Any:
    """Integers in a query are plain base-10 digits with an optional sign. Pydantic's lax
    parsing would also take `1_0`, ` 1` or `1.0`, and stops at 4,300 digits, while any
    page is valid however large; so the digits are checked and converted here."""
    if not isinstance(value, str):
        return value
    digits = value[1:] if value[:1] in ("+", "-") else value
    if not (0 < len(digits) <= MAX_INT_DIGITS and digits.isascii() and digits.isdigit()):
        raise PydanticKnownError("int_parsing")
    number = 0
    # int() refuses over 4,300 digits (sys.get_int_max_str_digits); chunks stay below it.
    for start in range(0, len(digits), _INT_CHUNK):
        chunk = digits[start : start + _INT_CHUNK]
        number = number * 10 ** len(chunk) + int(chunk)
    return -number if value[0] == "-" else number


_INT_CHUNK = 4000


def _query_int(default: int, maximum: int | None, description: str) -> Any:
    # The metadata of an `Annotated[int, ...]` query integer: a static type stays visible.
    return Field(default=default, ge=1, le=maximum, description=description, examples=[default])


_Base10 = BeforeValidator(_base10)
PageNumber = Annotated[
    int, _query_int(1, None, "Page number, from 1; a page past the end is empty."), _Base10
]
PageSize = Annotated[int, _query_int(PAGE_SIZE_DEFAULT, PAGE_SIZE_MAX, "Items per page."), _Base10]


class PageQuery(BaseModel):
    """Pagination of list, search and comment list."""

    model_config = ConfigDict(extra="ignore", frozen=True)

    page: PageNumber = 1
    page_size: PageSize = PAGE_SIZE_DEFAULT

    @property
    def offset(self) -> int:
        return (self.page - 1) * self.page_size


class ListOrder(StrEnum):
    """Order of an article list."""

    newest = "newest"
    oldest = "oldest"


class SearchOrder(StrEnum):
    """Order of search results."""

    relevance = "relevance"
    newest = "newest"
    oldest = "oldest"


class Fields(StrEnum):
    """Which form of article a page carries."""

    full = "full"
    summary = "summary"


def _bound(end: bool) -> Any:
    def check(value: str | None) -> str | None:
        if value is not None:
            date_bound_us(value, end=end)  # ValueError -> 422 at this parameter
        return value

    return AfterValidator(check)


# What the document says a bound is, so generated clients and fuzzers send dates and RFC 3339
# timestamps (a plain "string" would invite any text, which is a 422).
_BOUND_SCHEMA = WithJsonSchema(
    {"anyOf": [{"type": "string", "format": "date"}, {"type": "string", "format": "date-time"}]}
)

_BOUND_DOC = (
    " `YYYY-MM-DD` (UTC) or an RFC 3339 timestamp with an offset; inclusive."
    " `from` later than `to` is a 422 at `to`."
)


class DateRange(BaseModel):
    """A range of instants, `from` and `to` (docs/api.md §7): article lists and search, and
    the moderation transparency figures."""

    model_config = ConfigDict(extra="ignore", frozen=True, populate_by_name=True)

    from_: Annotated[
        Annotated[str, _BOUND_SCHEMA] | None,
        Field(
            alias="from",
            description="Published at or after this instant; a date alone means its first"
            " instant." + _BOUND_DOC,
            examples=["2026-11-01", "2026-11-20T08:30:00+09:00"],
        ),
        _bound(end=False),
    ] = None
    to: Annotated[
        Annotated[str, _BOUND_SCHEMA] | None,
        Field(
            description="Published at or before this instant; a date alone means the last"
            " instant of that UTC day." + _BOUND_DOC,
            examples=["2026-11-30"],
        ),
        _bound(end=True),
    ] = None

    @field_validator("to")
    @classmethod
    def _not_before_from(cls, value: str | None, info: ValidationInfo) -> str | None:
        start = info.data.get("from_")
        if (
            value is not None
            and start is not None
            and date_bound_us(start, end=False) > date_bound_us(value, end=True)
        ):
            raise ValueError("must not be earlier than `from`")
        return value

    @property
    def date_range(self) -> tuple[int | None, int | None]:
        """(first, last) published microsecond selected, None for an open end."""
        start = None if self.from_ is None else date_bound_us(self.from_, end=False)
        stop = None if self.to is None else date_bound_us(self.to, end=True)
        return start, stop


class FilterQuery(DateRange, PageQuery):
    """The date range and article form shared by list and search (docs/api.md §7)."""

    fields: Annotated[
        Fields,
        Field(
            description="`full` (default): items are Article; `summary`: ArticleSummary.",
            examples=["summary"],
        ),
    ] = Fields.full

    model_config = ConfigDict(extra="ignore", frozen=True, populate_by_name=True)

    @property
    def summary(self) -> bool:
        return self.fields is Fields.summary


_CATEGORY_DOC = "Exact, case-sensitive category; empty means no filter."


class ArticleListQuery(FilterQuery):
    category: Annotated[
        str | None,
        Field(description=_CATEGORY_DOC, examples=["politics"]),
    ] = None
    order: Annotated[
        ListOrder,
        Field(
            description="`newest` (default): published_at descending; `oldest`: ascending;"
            " ties by id ascending in both.",
            examples=["oldest"],
        ),
    ] = ListOrder.newest


class FeedQuery(BaseModel):
    model_config = ConfigDict(extra="ignore", frozen=True)

    category: Annotated[
        str | None,
        Field(
            description="Exact, case-sensitive category; empty means every category. A category"
            " with no article gives a valid feed without entries.",
            examples=["politics"],
        ),
    ] = None


class LatestQuery(BaseModel):
    model_config = ConfigDict(extra="ignore", frozen=True)

    limit: Annotated[int, _query_int(LIMIT_DEFAULT, LIMIT_MAX, "How many articles."), _Base10] = (
        LIMIT_DEFAULT
    )


class ChangesQuery(BaseModel):
    model_config = ConfigDict(extra="ignore", frozen=True)

    since: str | None = Field(
        default=None,
        description="A cursor: the `next` of an earlier answer. Without it, the initial"
        " listing: every current article and every retraction.",
        examples=[_CURSOR_EXAMPLE],
    )
    limit: Annotated[
        int,
        _query_int(CHANGES_LIMIT_DEFAULT, CHANGES_LIMIT_MAX, "How many changes at most."),
        _Base10,
    ] = CHANGES_LIMIT_DEFAULT


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
            description=_CATEGORY_DOC + " Facets ignore it.",
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


class CommentOrder(StrEnum):
    """Order of a comment list by creation time."""

    newest = "newest"
    oldest = "oldest"


class CommentListQuery(PageQuery):
    order: Annotated[
        CommentOrder,
        Field(description="`newest` (default) or `oldest` first.", examples=["oldest"]),
    ] = CommentOrder.newest


class CommentCountsQuery(BaseModel):
    model_config = ConfigDict(extra="ignore", frozen=True)

    article_id: ArticleIds


_KEY_CHARS = frozenset(chr(c) for c in range(0x20, 0x7F))
# The same rule for the document, over what HTTP can carry: printable ASCII, and after it
# only what HTTP (SP, HTAB) or the trimming here (U+0085, U+00A0) removes. A header value
# cannot start with space, and bytes 0x00-0x1F other than HTAB are refused by the server.
IDEMPOTENCY_KEY_PATTERN = r"^[\x21-\x7e](?:[\x20-\x7e]*[\x21-\x7e])?[\t\x20\x85\xa0]*$"


def _idempotency_key(value: str) -> str:
    key = value.strip()
    if not key or len(key) > IDEMPOTENCY_KEY_MAX or not set(key) <= _KEY_CHARS:
        raise ValueError(
            f"Idempotency-Key must be 1 to {IDEMPOTENCY_KEY_MAX} printable ASCII characters"
        )
    return key


class CommentCreateHeaders(BaseModel):
    model_config = ConfigDict(extra="ignore", frozen=True)

    idempotency_key: Annotated[
        str | None,
        AfterValidator(lambda v: v if v is None else _idempotency_key(v)),
        Field(
            alias="idempotency-key",
            min_length=1,
            max_length=IDEMPOTENCY_KEY_MAX,
            json_schema_extra={"pattern": IDEMPOTENCY_KEY_PATTERN},
            description="A retry with the same key for the same article returns the comment"
            " created the first time (201) and creates nothing.",
            examples=["3f1c2a9e-order-42"],
        ),
    ] = None
