"""Comment records, store errors and the store interface shared by both backends.

A stored comment is the wire model `app.comments.comment_wire.Comment`."""

from __future__ import annotations

import os
import time
from dataclasses import dataclass
from datetime import datetime
from typing import Literal

from app.comments.comment_wire import Comment, CommentOrder
from app.comments.wire import NoticeBrief

Order = CommentOrder

_CROCKFORD = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"


Verdict = Literal["banned", "suspect"]


@dataclass(frozen=True, slots=True)
class Screening:
    """What the create and edit rules (docs/moderation.md, "Rules") take from the text and
    the article, decided before the store is asked."""

    verdict: Verdict | None  # a banned or suspect term in the author or the content
    has_link: bool
    default_mode: str  # NEWS_MODERATION_MODE; an article's own setting overrides it
    closed_by_age: bool = False  # NEWS_COMMENTS_CLOSE_AFTER_DAYS has passed


@dataclass(frozen=True, slots=True)
class NewComment:
    """A validated create request."""

    language: str
    article_id: str
    author: str
    content: str
    parent_id: str | None
    idempotency_key: str | None
    # Fingerprint of the normalised fields, to tell a retry from a different
    # request that reuses an Idempotency-Key.
    request_hash: str
    author_id: str | None = None  # the author who sent their token; None: a new author
    screening: Screening = Screening(None, False, "post")


@dataclass(frozen=True, slots=True)
class Mod:
    """The last rule or decision that set a comment's status (the row's mod_* columns)."""

    reason: str | None
    automated: bool
    at: datetime
    moderator: str | None = None
    note: str | None = None
    explanation: str | None = None


@dataclass(frozen=True, slots=True)
class Stored:
    """A comment with what only its author and moderators see."""

    comment: Comment
    status: str
    mod: Mod | None
    author_id: str | None


@dataclass(frozen=True, slots=True)
class RateLimit:
    count: int
    seconds: int
    # The client address (or /64 network); the store keeps only an HMAC of it, keyed
    # by a secret kept in the database so every instance derives the same key.
    client: str


@dataclass(frozen=True, slots=True)
class Created:
    stored: Stored
    replayed: bool  # True when an Idempotency-Key matched an earlier create

    @property
    def comment(self) -> Comment:
        return self.stored.comment


class StoreUnavailable(Exception):
    """The database cannot be reached or did not answer in time."""


class ParentNotFound(Exception):
    """`parent_id` is not a visible comment of the same article."""


class RateLimited(Exception):
    def __init__(self, retry_after: int) -> None:
        super().__init__(retry_after)
        self.retry_after = retry_after


class IdempotencyConflict(Exception):
    """The Idempotency-Key was used before for a different request, or its comment is gone."""


class Refused(Exception):
    """A request the rules refuse, with the contract's status and detail."""

    def __init__(self, status: int, detail: str) -> None:
        super().__init__(detail)
        self.status = status
        self.detail = detail


def closed() -> Refused:
    return Refused(403, "Comments are closed")


def duplicate() -> Refused:
    return Refused(409, "Duplicate comment")


@dataclass(frozen=True, slots=True)
class Moderated:
    """A comment with what a moderator sees beside it."""

    stored: Stored
    reports: dict[str, int]
    notices: list[NoticeBrief]


class Unfit(Exception):
    """A decision that does not fit the comment or notice (a 422 at the body)."""


def new_comment_id() -> str:
    """A ULID-shaped id: 48-bit millisecond time then 80 random bits, Crockford base32.

    Time-prefixed so ids created later sort later, which keeps the (created_at, id)
    index append-mostly; the random part makes ids unguessable and collision-free
    across processes and instances without coordination.
    """
    value = (time.time_ns() // 1_000_000) << 80 | int.from_bytes(os.urandom(10), "big")
    return "".join(_CROCKFORD[(value >> shift) & 31] for shift in range(125, -1, -5))
