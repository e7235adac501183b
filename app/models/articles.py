"""The shapes of articles: the source record the builder validates, the Article and its
summary, provenance, corrections and retractions (docs/api.md §11), and the list queries."""

from __future__ import annotations

import unicodedata
from datetime import datetime
from enum import StrEnum
from typing import Annotated, Any, Literal

from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    StrictStr,
    ValidationInfo,
    field_validator,
    model_validator,
)

from app.models.common import (
    ID_MAX,
    Base10,
    FilterQuery,
    Language,
    Page,
    Timestamp,
    query_int,
    wire_config,
)
from app.timestamps import format_timestamp

LIMIT_DEFAULT, LIMIT_MAX = 10, 50

# -- articles ----------------------------------------------------------------------------


# Ids an article cannot have: the literal path segments of the article routes.
RESERVED_IDS = frozenset({"latest", "search"})


def _has_control(text: str) -> bool:
    return any(unicodedata.category(ch) == "Cc" for ch in text)


def _article_id(value: str) -> str:
    if len(value) > ID_MAX:
        raise ValueError(f"is {len(value)} characters, the maximum is {ID_MAX}")
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

    model_config = wire_config(frozen=True)

    by: str
    at: Timestamp


class Provenance(BaseModel):
    """How the article was made, in the IPTC Digital Source Type vocabulary."""

    model_config = wire_config(frozen=True)

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

    model_config = wire_config(frozen=True)

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

    model_config = wire_config(strict=False)

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
    if len(value) > ID_MAX:
        raise ValueError(f"is {len(value)} characters, the maximum is {ID_MAX}")
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

    model_config = wire_config()

    id: str
    language: Language
    title: str
    summary: str
    category: str
    image_url: str | None
    published_at: Timestamp
    ai_generated: bool
    """Written wholly or partly by a trained model (`provenance.ai_generated`)."""


class ArticleList(Page[Article | ArticleSummary]):
    """A page of articles; a page past the end has no items and the true total. Items are
    Article objects, or ArticleSummary objects with `fields=summary`."""


class CorrectionEntry(BaseModel):
    """One line of the public corrections log: a correction, or a retraction (whose `text`
    is its reason)."""

    model_config = wire_config()

    article_id: str
    title: str
    kind: Literal["correction", "retraction"]
    at: Timestamp
    text: str


class CorrectionList(Page[CorrectionEntry]):
    """A page of a language's corrections log: `at` descending, then `article_id`, then
    `kind` (`correction` before `retraction`)."""


RETRACTED_EXAMPLE: dict[str, Any] = {
    "detail": "Article retracted",
    "id": "en-0001",
    "title": "A title",
    "retracted_at": "2026-11-21T09:00:00Z",
    "reason": "The figures it reported were wrong.",
}


class RetractedArticle(BaseModel):
    """The 410 of a retracted article: the notice that replaces it."""

    model_config = wire_config(json_schema_extra={"examples": [RETRACTED_EXAMPLE]})

    detail: Literal["Article retracted"]
    id: str
    title: str
    retracted_at: Timestamp
    reason: str


# -- comments ----------------------------------------------------------------------------


class ListOrder(StrEnum):
    """Order of an article list."""

    newest = "newest"
    oldest = "oldest"


CATEGORY_DOC = "Exact, case-sensitive category; empty means no filter."


class ArticleListQuery(FilterQuery):
    category: Annotated[
        str | None,
        Field(description=CATEGORY_DOC, examples=["politics"]),
    ] = None
    order: Annotated[
        ListOrder,
        Field(
            description="`newest` (default): published_at descending; `oldest`: ascending;"
            " ties by id ascending in both.",
            examples=["oldest"],
        ),
    ] = ListOrder.newest


class LatestQuery(BaseModel):
    model_config = ConfigDict(extra="ignore", frozen=True)

    limit: Annotated[int, query_int(LIMIT_DEFAULT, LIMIT_MAX, "How many articles."), Base10] = (
        LIMIT_DEFAULT
    )
