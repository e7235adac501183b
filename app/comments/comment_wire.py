"""The wire shapes of comments as readers and authors see and send them (docs/api.md §12):
the Comment, its list and counts, the create body, headers and queries. Moderation's shapes
are in app/comments/wire.py."""

from __future__ import annotations

import unicodedata
from collections.abc import Callable
from enum import StrEnum
from typing import Annotated, Any

from pydantic import AfterValidator, BaseModel, BeforeValidator, ConfigDict, Field, StrictStr

from app.models.common import ID_MAX, CommentTimestamp, Language, Page, PageQuery, wire_config

AUTHOR_MAX = 80
CONTENT_MAX = 5000
COUNTS_MAX_IDS = 100
IDEMPOTENCY_KEY_MAX = 200


class Comment(BaseModel):
    """A reader's comment on one article in one language."""

    model_config = wire_config(frozen=True)

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

    model_config = wire_config(
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

    model_config = wire_config()

    article_id: str
    language: Language
    count: Annotated[int, Field(ge=0)]


class CommentCounts(BaseModel):
    """Comment counts of several articles; null for an id that is not an article."""

    model_config = wire_config()

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

    model_config = wire_config()

    article_ids: ArticleIds


# -- errors and operations ---------------------------------------------------------------


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
