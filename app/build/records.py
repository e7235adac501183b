"""Reading and validating source articles (API contract, section 6).

Every problem is reported as `file:line: field 'name': what is wrong`, and all problems
of a source tree are collected (up to a cap) so one build run shows them together.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import orjson

from app.bundle.format import MAX_ID_CHARS, RESERVED_IDS
from app.languages import LANGUAGE_SET

MAX_REPORTED_ERRORS = 100

_RFC3339 = re.compile(
    r"(\d{4}-\d{2}-\d{2})[Tt ](\d{2}:\d{2}:\d{2})(?:\.(\d+))?([Zz]|[+-]\d{2}:\d{2})?"
)
_REQUIRED_TEXT = ("id", "language", "title", "summary", "content", "category")


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


class _RecordError(Exception):
    def __init__(self, field: str | None, message: str) -> None:
        super().__init__(message)
        self.field = field
        self.message = message


def format_timestamp(value: datetime) -> str:
    """RFC 3339 UTC with `Z`; fractional seconds only when the source had them."""
    base = value.strftime("%Y-%m-%dT%H:%M:%S")
    if value.microsecond:
        base += f".{value.microsecond:06d}".rstrip("0")
    return base + "Z"


def parse_timestamp(field: str, value: Any) -> datetime:
    if not isinstance(value, str):
        raise _RecordError(field, f"must be a string, got {_type_name(value)}")
    m = _RFC3339.fullmatch(value)
    if not m:
        raise _RecordError(field, f"not an RFC 3339 timestamp: {value!r}")
    date, time, fraction, offset = m.groups()
    if offset is None:
        raise _RecordError(field, f"timestamp has no time-zone offset: {value!r}")
    iso = f"{date}T{time}"
    if fraction:
        iso += "." + fraction[:6].ljust(6, "0")  # microsecond precision, as datetime holds
    iso += "+00:00" if offset in ("Z", "z") else offset
    try:
        return datetime.fromisoformat(iso).astimezone(UTC)
    except (ValueError, OverflowError) as exc:  # Overflow: year 1 / 9999 shifted out of range
        raise _RecordError(field, f"invalid timestamp {value!r}: {exc}") from None


def _type_name(value: Any) -> str:
    return (
        "null"
        if value is None
        else {
            bool: "boolean",
            int: "number",
            float: "number",
            str: "string",
            list: "array",
            dict: "object",
        }.get(type(value), type(value).__name__)
    )


def _has_control(text: str) -> bool:
    return any(unicodedata.category(ch) == "Cc" for ch in text)


def _check_id(value: str) -> None:
    if not value:
        raise _RecordError("id", "must not be empty")
    if len(value) > MAX_ID_CHARS:
        raise _RecordError("id", f"is {len(value)} characters, the maximum is {MAX_ID_CHARS}")
    if "/" in value:
        raise _RecordError("id", f"must not contain '/': {value!r}")
    if _has_control(value):
        raise _RecordError("id", f"must not contain control characters: {value!r}")
    if value in RESERVED_IDS:
        raise _RecordError("id", f"{value!r} is reserved (it names an operation)")
    if value in (".", ".."):
        raise _RecordError("id", f"{value!r} cannot be addressed in a URL path")


def _optional_text(record: dict[str, Any], field: str) -> str | None:
    value = record.get(field)
    if value is not None and not isinstance(value, str):
        raise _RecordError(field, f"must be a string or null, got {_type_name(value)}")
    return value


def parse_record(record: Any, source: str) -> Article:
    if not isinstance(record, dict):
        raise _RecordError(None, f"a record must be a JSON object, got {_type_name(record)}")
    for field in (*_REQUIRED_TEXT, "published_at"):
        if field not in record:
            raise _RecordError(field, "is required")
    for field in _REQUIRED_TEXT:
        value = record[field]
        if not isinstance(value, str):
            raise _RecordError(field, f"must be a string, got {_type_name(value)}")
        if field != "id" and not value.strip():
            raise _RecordError(field, "must not be blank")
    _check_id(record["id"])
    if record["language"] not in LANGUAGE_SET:
        raise _RecordError("language", f"unsupported language {record['language']!r}")
    tags = record.get("tags")
    if tags is None:
        tags = []
    if not isinstance(tags, list) or not all(isinstance(t, str) for t in tags):
        raise _RecordError("tags", "must be an array of strings")
    published = parse_timestamp("published_at", record["published_at"])
    updated = published
    if record.get("updated_at") is not None:
        updated = parse_timestamp("updated_at", record["updated_at"])
        if updated < published:
            raise _RecordError("updated_at", "is earlier than published_at")
    return Article(
        id=record["id"],
        language=record["language"],
        title=record["title"],
        summary=record["summary"],
        content=record["content"],
        category=record["category"],
        tags=tuple(tags),
        author=_optional_text(record, "author"),
        image_url=_optional_text(record, "image_url"),
        published=published,
        updated=updated,
        source=source,
    )


def source_files(src: Path) -> list[Path]:
    """Every *.jsonl below src, in a fixed order so builds are reproducible."""
    return sorted(p for p in src.rglob("*.jsonl") if p.is_file())


def read_articles(src: Path) -> list[Article]:
    """Parse and validate the whole source tree; raises SourceError listing the problems."""
    if not src.is_dir():
        raise SourceError([f"{src}: source directory does not exist"])
    files = source_files(src)
    if not files:
        raise SourceError([f"{src}: no *.jsonl files found"])
    problems: list[str] = []
    articles: list[Article] = []
    seen: dict[tuple[str, str], str] = {}

    def problem(where: str, field: str | None, message: str) -> None:
        problems.append(f"{where}: field '{field}': {message}" if field else f"{where}: {message}")

    for path in files:
        with path.open("rb") as fh:
            for number, line in enumerate(fh, start=1):
                if len(problems) >= MAX_REPORTED_ERRORS:
                    problems.append(f"(stopped after {MAX_REPORTED_ERRORS} problems)")
                    raise SourceError(problems)
                if not line.strip():
                    continue
                where = f"{path}:{number}"
                try:
                    article = parse_record(orjson.loads(line), where)
                except orjson.JSONDecodeError as exc:
                    problem(where, None, f"invalid JSON: {exc}")
                    continue
                except _RecordError as exc:
                    problem(where, exc.field, exc.message)
                    continue
                key = (article.language, article.id)
                if key in seen:
                    problem(
                        where,
                        "id",
                        f"duplicate id {article.id!r} in language {article.language!r} "
                        f"(first at {seen[key]})",
                    )
                    continue
                seen[key] = where
                articles.append(article)
    if problems:
        raise SourceError(problems)
    return articles
