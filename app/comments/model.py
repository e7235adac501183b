"""Comment records, store errors and the store interface shared by both backends.

A stored comment is the wire model `app.models.Comment`."""

from __future__ import annotations

import os
import time
from dataclasses import dataclass
from typing import Protocol

from app.models import Comment, CommentOrder

Order = CommentOrder

_CROCKFORD = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"


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


@dataclass(frozen=True, slots=True)
class RateLimit:
    count: int
    seconds: int
    # The client address (or /64 network); the store keeps only an HMAC of it, keyed
    # by a secret kept in the database so every instance derives the same key.
    client: str


@dataclass(frozen=True, slots=True)
class Created:
    comment: Comment
    replayed: bool  # True when an Idempotency-Key matched an earlier create


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


class CommentStore(Protocol):
    def create(self, new: NewComment, rate: RateLimit) -> Created: ...
    def get(self, language: str, article_id: str, comment_id: str) -> Comment | None: ...
    def list_page(
        self, language: str, article_id: str, order: Order, limit: int, offset: int
    ) -> tuple[int, list[Comment]]: ...
    def count(self, language: str, article_id: str) -> int: ...
    def counts(self, language: str, article_ids: list[str]) -> dict[str, int]: ...
    def delete(self, language: str, article_id: str, comment_id: str) -> bool: ...
    def ping(self) -> None: ...
    def close(self) -> None: ...


def new_comment_id() -> str:
    """A ULID-shaped id: 48-bit millisecond time then 80 random bits, Crockford base32.

    Time-prefixed so ids created later sort later, which keeps the (created_at, id)
    index append-mostly; the random part makes ids unguessable and collision-free
    across processes and instances without coordination.
    """
    value = (time.time_ns() // 1_000_000) << 80 | int.from_bytes(os.urandom(10), "big")
    return "".join(_CROCKFORD[(value >> shift) & 31] for shift in range(125, -1, -5))
