"""What a route declares (app/routes.py holds the table of them): its path, its resource, its
operations with their documentation texts and error statuses, its cache policy and whether
its answers are kept.

app/mount.py mounts the declarations on Falcon and app/openapi.py documents them; both
read them from here, and neither infers what a route does from its path.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal, NamedTuple

from pydantic import BaseModel

from app.bundle.store import BundleStore
from app.comments import CommentService
from app.config import Settings
from app.http_cache import CachePolicy
from app.metrics import Metrics


class Texts(NamedTuple):
    """An operation's documentation in /openapi.json."""

    summary: str
    description: str
    returns: str  # the description of the success response


Auth = Literal["moderator", "author", "author?", "notice", "moderator|author"]


# Error statuses, by what causes them; an operation lists the groups that apply to it.
# Every request can meet the request-line bound (app.middleware): `error_statuses` adds it.
URI_TOO_LONG = {414: "Request line too long."}
LANGUAGE = {400: "Unsupported language."}  # a path with {language}: app.mount checks it
# A path with {article_id} whose operation looks the article up (comments close with it).
ARTICLE = {404: "Article not found.", 410: "Article retracted: comments close with it."}
# The article itself: its 410 is the retraction notice (`gone="notice"`).
RETRACTION_NOTICE = {
    410: "Article retracted: the notice that replaces it, cacheable like the article"
    " (If-None-Match does not apply)."
}
VALIDATED = {422: "Invalid parameters, headers or body."}  # a query, header or body model
BODY = {413: "Body larger than 64 KiB.", 415: "Content-Type is not application/json."}
# A "public" route's answers go through app.delivery's content negotiation.
CODINGS = {406: "Accept-Encoding refuses identity and every coding offered."}
STORE = {503: "Comment store unavailable."}  # every comment and moderation operation

Gone = Literal["notice", "cursor"]


def error_statuses(*groups: Mapping[int, str]) -> dict[int, str]:
    """The request-line bound's 414, then `groups` in order (a later one words a status
    again), by status."""
    merged: dict[int, str] = dict(URI_TOO_LONG)
    for group in groups:
        merged.update(group)
    return dict(sorted(merged.items()))


@dataclass(frozen=True)
class Operation:
    operation_id: str
    texts: Texts
    response: type[BaseModel] | dict[str, Any] | None  # a model, a JSON Schema, or no body
    method: str = "get"  # every GET also answers HEAD
    status: int = 200
    query: type[BaseModel] | None = None
    body: type[BaseModel] | None = None
    headers: type[BaseModel] | None = None  # request headers, validated like the query
    media_type: str = "application/json"  # of the success response
    # Every error status it can answer, with what each means here: built with
    # `error_statuses` from the groups below and its own (app/openapi.py documents exactly
    # these, nothing inferred).
    errors: dict[int, str] = field(default_factory=dict)
    # What its 410 answers where that is not an `Error`: "notice", the article's retraction
    # notice (app.models.RetractedArticle, cacheable like the article); "cursor", an expired
    # change-feed cursor (`Cursor expired`, never cached).
    gone: Gone | None = None
    # The bearer token it reads (app/comments/auth.py checks it first, after the language):
    # "moderator", "author" (required), "author?" (optional) or "notice" (a notifier's).
    auth: Auth | None = None
    # The `detail` of an error as this operation words it, where it is not the one of
    # app.openapi.ERROR_EXAMPLES for its status (shown as the response's example).
    error_details: dict[int, str] = field(default_factory=dict)
    response_headers: tuple[str, ...] = ()  # names in app.openapi.RESPONSE_HEADERS
    links: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Shared:
    """What the resources of one app are made from: built once by app.wsgi.create_app."""

    settings: Settings
    store: BundleStore
    cache: CachePolicy  # Cache-Control of every "public" route
    comments: CommentService
    metrics: Metrics


# "public": the resource is an app.resources.articles.BundleResource, given the app's
# CachePolicy by app.mount: ETag, If-None-Match -> 304, Vary, Cache-Control public and
# Surrogate-Key on every answer (app.delivery.send). "no-store": app.mount sets
# `Cache-Control: no-store` before the responder runs, so its errors carry it too.
# None: the resource says what it says (/openapi.json nothing, /docs assets their own).
CachePolicyName = Literal["public", "no-store"] | None


@dataclass(frozen=True)
class Route:
    path: str
    make: Callable[[Shared], object]  # the route's resource, made once when mounted
    tag: str
    operations: tuple[Operation, ...]
    cache: CachePolicyName = "no-store"
    documented: bool = True  # /docs and its assets are pages, not API operations
    # Whether app.response_cache keeps the route's answers (its 200s and 410s): only where
    # an answer is a function of the bundle, the request target and the negotiated coding
    # (docs/delivery.md, "One answer per page and coding"). True, False, or a test of the
    # path's fields; None: every answer of a "public" route, none of the others.
    keep: bool | Callable[[Mapping[str, str]], bool] | None = None

    @property
    def keeps(self) -> bool | Callable[[Mapping[str, str]], bool]:
        return self.cache == "public" if self.keep is None else self.keep
