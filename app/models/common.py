"""What every area's shapes share: the wire configuration, timestamps, languages, the
page envelope, and the paging and date-range parameters."""

from __future__ import annotations

from datetime import datetime
from enum import StrEnum
from typing import Annotated, Any, Generic, TypeVar

from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    PlainSerializer,
    ValidationInfo,
    WithJsonSchema,
    field_validator,
)
from pydantic_core import PydanticKnownError

from app.languages import LANGUAGES
from app.timestamps import date_bound_us, format_timestamp, parse_timestamp

PAGE_SIZE_DEFAULT, PAGE_SIZE_MAX = 20, 100
# An article id's most characters (the source format's rule, docs/architecture.md): longer
# strings cannot be ids this service issued.
ID_MAX = 200
# "Any page >= 1 is accepted, however large", but a request line (8190 bytes in gunicorn)
# cannot carry more digits than this; the bound keeps big-integer work small.
MAX_INT_DIGITS = 10_000

T = TypeVar("T")

Language = StrEnum("Language", {code: code for code in LANGUAGES})  # type: ignore[misc]
Language.__doc__ = "One of the nine language codes."


def wire_config(title: str | None = None, **extra: Any) -> ConfigDict:
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


class Page(BaseModel, Generic[T]):
    """The envelope of list, search and comment list; serialised by hand in app/params.py
    for speed, and checked against this declaration by tests."""

    model_config = wire_config()

    items: list[T]
    total: Annotated[int, Field(ge=0)]
    """Items the request selects, over all pages."""
    page: Annotated[int, Field(ge=1)]
    page_size: Annotated[int, Field(ge=1, le=PAGE_SIZE_MAX)]
    total_pages: Annotated[int, Field(ge=0)]
    """ceil(total / page_size); 0 when total is 0."""


def _base10(value: Any) -> Any:
    """Integers in a query are plain base-10 digits with an optional sign. Pydantic's lax
    parsing would also take `1_0`, ` 1` or `1.0`, and stops at 4,300 digits, while any
    page is valid however large; so the digits are checked and converted here."""
    if type(value) is str and len(value) <= _SHORT and value.isascii() and value.isdigit():
        return int(value)  # what nearly every request sends: a few digits, no sign
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
# Up to this many ASCII digits, int() alone converts: far under the 4,300 digits int()
# refuses, and past any page or size a client sends. An empty string is not isdigit().
_SHORT = 18


def query_int(default: int, maximum: int | None, description: str) -> Any:
    # The metadata of an `Annotated[int, ...]` query integer: a static type stays visible.
    return Field(default=default, ge=1, le=maximum, description=description, examples=[default])


Base10 = BeforeValidator(_base10)
PageNumber = Annotated[
    int, query_int(1, None, "Page number, from 1; a page past the end is empty."), Base10
]
PageSize = Annotated[int, query_int(PAGE_SIZE_DEFAULT, PAGE_SIZE_MAX, "Items per page."), Base10]


class PageQuery(BaseModel):
    """Pagination of list, search and comment list."""

    model_config = ConfigDict(extra="ignore", frozen=True)

    page: PageNumber = 1
    page_size: PageSize = PAGE_SIZE_DEFAULT

    @property
    def offset(self) -> int:
        return (self.page - 1) * self.page_size


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
