"""The shapes of what mirrors and readers follow: feed parameters and the change feed
(docs/publishing.md, "The change feed")."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
)

from app.models.common import Base10, Timestamp, query_int, wire_config

CHANGES_LIMIT_DEFAULT, CHANGES_LIMIT_MAX = 100, 1000

_CURSOR_EXAMPLE = "ATdBRGQVEQWHAQUAAAAAAAAAhONuXA"


class Change(BaseModel):
    """One item of the change feed: an article's state now, and the publish that made it."""

    model_config = wire_config()

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

    model_config = wire_config()

    items: list[Change]
    next: Annotated[str, Field(examples=[_CURSOR_EXAMPLE])]
    """The cursor to ask with next (`since`); never null."""
    more: bool
    """Whether asking with `next` now would return items."""


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
        query_int(CHANGES_LIMIT_DEFAULT, CHANGES_LIMIT_MAX, "How many changes at most."),
        Base10,
    ] = CHANGES_LIMIT_DEFAULT
