"""Reading and validating source articles (docs/api.md §6).

Every problem is reported as `file:line: field 'name': what is wrong`, and all problems
of a source tree are collected (up to a cap) so one build run shows them together.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

import pydantic

from app import models
from app.timestamps import format_timestamp

MAX_REPORTED_ERRORS = 100
# Fields whose problems are named down to the nested item (`corrections.1.text`).
NESTED_FIELDS = frozenset({"provenance", "corrections", "retracted"})


# Fields the `Article` record and the wire model `app.models.Article` hold alike; the others
# differ in type (language, tags) or name (published/updated hold datetimes). `from_wire` and
# `to_wire` are the only crossings between the two shapes.
_SAME_FIELDS = ("id", "title", "summary", "content", "category", "author", "image_url")


@dataclass(frozen=True, slots=True)
class Article:
    id: str
    language: str
    title: str
    summary: str
    content: str
    category: str
    tags: tuple[str, ...]
    author: str | None
    image_url: str | None
    published: datetime
    updated: datetime
    source: str  # "file:line", for messages about this record
    story_id: str | None = None
    # language -> article id of the story's other languages, in LANGUAGES order (builder-set)
    translations: tuple[tuple[str, str], ...] = ()
    provenance: models.Provenance = models.DEFAULT_PROVENANCE
    corrections: tuple[models.Correction, ...] = ()  # oldest first
    retracted: models.Retraction | None = None

    @property
    def published_at(self) -> str:
        return format_timestamp(self.published)

    @property
    def updated_at(self) -> str:
        return format_timestamp(self.updated)


class SourceError(Exception):
    """The source tree has invalid records; `problems` lists them as file:line messages."""

    def __init__(self, problems: list[str]) -> None:
        super().__init__("\n".join(problems))
        self.problems = problems

    def __reduce__(self) -> tuple[type[SourceError], tuple[list[str]]]:
        return SourceError, (self.problems,)  # raised in a worker process, read in the builder


class RecordError(Exception):
    def __init__(self, field: str | None, message: str) -> None:
        super().__init__(message)
        self.field = field
        self.message = message


def parse_record(record: Any, source: str) -> Article:
    """Validate one source line with `app.models.SourceArticle` (the wire Article plus
    `story_id`)."""
    if not isinstance(record, dict):
        raise RecordError(None, f"a record must be a JSON object, got {type(record).__name__}")
    try:
        valid = models.SourceArticle.model_validate(record)
    except pydantic.ValidationError as exc:
        # The first problem, named by its field: one line of the source, one message.
        error = exc.errors(include_url=False)[0]
        loc = error["loc"]
        field = str(loc[0]) if loc else None
        if field in NESTED_FIELDS:  # which provenance field, which correction
            field = ".".join(str(part) for part in loc)
        raise RecordError(field, error["msg"]) from None
    corrections = tuple(sorted(valid.corrections, key=lambda c: c.at))  # stable: source order
    updated = valid.updated_at
    if corrections and corrections[-1].at > updated:
        updated = corrections[-1].at  # a correction updates the article
    return from_wire(
        valid,
        source=source,
        story_id=valid.story_id,
        updated=updated,
        provenance=valid.provenance.wire(),
        corrections=corrections,
        retracted=valid.retracted,
    )


def from_wire(
    wire: models.Article,
    *,
    source: str,
    story_id: str | None,
    updated: datetime | None = None,
    translations: tuple[tuple[str, str], ...] = (),
    provenance: models.Provenance | None = None,
    corrections: tuple[models.Correction, ...] | None = None,
    retracted: models.Retraction | None = None,
) -> Article:
    """The builder's record of a wire Article (a validated source line, or an Article JSON
    read back from the bundle); what the wire model does not hold is given."""
    return Article(
        **{name: getattr(wire, name) for name in _SAME_FIELDS},
        language=wire.language.value,
        tags=tuple(wire.tags),
        published=wire.published_at,
        updated=wire.updated_at if updated is None else updated,
        source=source,
        story_id=story_id,
        translations=translations,
        provenance=wire.provenance if provenance is None else provenance,
        corrections=tuple(wire.corrections) if corrections is None else corrections,
        retracted=retracted,
    )


def to_wire(a: Article) -> models.Article:
    """The wire Article of a record, built without validation: `parse_record` validated every
    field from this same model."""
    return models.Article.model_construct(
        **{name: getattr(a, name) for name in _SAME_FIELDS},
        language=models.Language(a.language),
        tags=list(a.tags),
        published_at=a.published,
        updated_at=a.updated,
        translations=dict(a.translations),
        provenance=a.provenance,
        corrections=list(a.corrections),
    )


def source_files(src: Path) -> list[Path]:
    """Every *.jsonl below src, in a fixed order so builds are reproducible."""
    return sorted(p for p in src.rglob("*.jsonl") if p.is_file())
