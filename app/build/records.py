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
# differ in type (language, tags) or name (published/updated hold datetimes).
SAME_FIELDS = ("id", "title", "summary", "content", "category", "author", "image_url")


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
    return Article(
        **{name: getattr(valid, name) for name in SAME_FIELDS},
        language=valid.language.value,
        tags=tuple(valid.tags),
        published=valid.published_at,
        updated=updated,
        source=source,
        story_id=valid.story_id,
        provenance=valid.provenance.wire(),
        corrections=corrections,
        retracted=valid.retracted,
    )


def source_files(src: Path) -> list[Path]:
    """Every *.jsonl below src, in a fixed order so builds are reproducible."""
    return sorted(p for p in src.rglob("*.jsonl") if p.is_file())
