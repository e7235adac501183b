"""HTTP resources for the comment routes (docs/api.md §4).

Every operation checks, in order: language (400), the admin token where it needs one (401),
parameters and body (415/413/422), the article (404), then the comment. The first two, and
`Cache-Control: no-store` on every answer, come from the routes' declarations
(app/routes.py, applied by app.mount before a responder runs).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NoReturn, TypeVar
from urllib.parse import quote

import falcon

from app.comments.clients import client_identity
from app.comments.model import (
    CommentStore,
    IdempotencyConflict,
    ParentNotFound,
    RateLimit,
    RateLimited,
    StoreUnavailable,
)
from app.comments.validation import parent_not_found, plausible_id, read_create, read_json
from app.config import Settings
from app.errors import JSON_TYPE, APIError, article_not_found
from app.links import set_link
from app.models import (
    CommentCount,
    CommentCounts,
    CommentCountsQuery,
    CommentCountsRequest,
    CommentListQuery,
    Language,
)
from app.params import list_body, parse

T = TypeVar("T")
ArticleExists = Callable[[str, str], bool]


class Context:
    """What every comment resource needs; one instance per service."""

    def __init__(
        self,
        settings: Settings,
        store: CommentStore,
        article_exists: ArticleExists,
        article_retracted: ArticleExists | None = None,
    ) -> None:
        self.settings = settings
        self.store = store
        self.article_exists = article_exists
        self.article_retracted = article_retracted

    def require_article(self, language: str, article_id: str) -> None:
        if not self.article_exists(language, article_id):
            if self.article_retracted is not None and self.article_retracted(language, article_id):
                raise APIError(410, "Article retracted")  # comments close with the article
            raise article_not_found()

    def call(self, operation: Callable[..., T], *args: Any) -> T:
        try:
            return operation(*args)
        except StoreUnavailable:
            raise APIError(503, "Comment store unavailable") from None


def _send(resp: falcon.Response, body: bytes, status: int = 200) -> None:
    resp.status = status
    resp.content_type = JSON_TYPE
    resp.data = body


def _comment_not_found() -> NoReturn:
    raise APIError(404, "Comment not found")


def comment_location(language: str, article_id: str, comment_id: str) -> str:
    segments = (quote(s, safe="") for s in (language, article_id, comment_id))
    return "/api/v1/{}/articles/{}/comments/{}".format(*segments)


class _ContextResource:
    """Every comment resource is built around the service's one Context."""

    def __init__(self, ctx: Context) -> None:
        self.ctx = ctx


class CommentsResource(_ContextResource):
    """`/api/v1/{language}/articles/{article_id}/comments`: list and create."""

    def on_get(
        self, req: falcon.Request, resp: falcon.Response, language: str, article_id: str
    ) -> None:
        ctx = self.ctx
        query = parse(req, CommentListQuery)
        ctx.require_article(language, article_id)
        total, comments = ctx.call(
            ctx.store.list_page,
            language,
            article_id,
            query.order,
            query.page_size,
            query.offset,
        )
        set_link(req, resp, CommentListQuery, query.page, query.page_size, total)
        _send(resp, list_body(query, [c.model_dump_json().encode() for c in comments], total))

    on_head = on_get

    def on_post(
        self, req: falcon.Request, resp: falcon.Response, language: str, article_id: str
    ) -> None:
        ctx = self.ctx
        new = read_create(req, language, article_id)
        ctx.require_article(language, article_id)
        rate = RateLimit(
            ctx.settings.comment_rate_count,
            ctx.settings.comment_rate_seconds,
            client_identity(req, ctx.settings.trusted_proxies, ctx.settings.trust_unix_peers),
        )
        try:
            created = ctx.call(ctx.store.create, new, rate)
        except ParentNotFound:
            raise parent_not_found(new.parent_id or "") from None
        except RateLimited as limited:
            raise APIError(
                429,
                f"Too many comments: at most {rate.count} per {rate.seconds} seconds;"
                f" retry in {limited.retry_after} seconds",
                headers={"Retry-After": str(limited.retry_after)},
            ) from None
        except IdempotencyConflict as conflict:
            raise APIError(409, str(conflict)) from None
        comment = created.comment
        resp.set_header("Location", comment_location(language, article_id, comment.id))
        if created.replayed:
            resp.set_header("Idempotent-Replayed", "true")
        _send(resp, comment.model_dump_json().encode(), 201)


CommentTarget = tuple[str, str, str]  # (language, article_id, comment_id)


def _comment_target(
    req: falcon.Request, resp: falcon.Response, resource: object, params: dict[str, Any]
) -> None:
    """The checks before the store is asked, for each of CommentResource's responders: the
    article, then whether the id could be one this service issued. They come after the
    language and the admin token (app.mount wraps the responders this hook is part of)."""
    assert isinstance(resource, CommentResource)
    target = params.pop("language"), params.pop("article_id"), params.pop("comment_id")
    resource.ctx.require_article(target[0], target[1])
    if not plausible_id(target[2]):
        _comment_not_found()
    params["target"] = target


@falcon.before(_comment_target)
class CommentResource(_ContextResource):
    """`/api/v1/{language}/articles/{article_id}/comments/{comment_id}`: get and delete."""

    def on_get(self, req: falcon.Request, resp: falcon.Response, target: CommentTarget) -> None:
        ctx = self.ctx
        comment = ctx.call(ctx.store.get, *target)
        if comment is None:
            _comment_not_found()
        _send(resp, comment.model_dump_json().encode())

    on_head = on_get

    def on_delete(self, req: falcon.Request, resp: falcon.Response, target: CommentTarget) -> None:
        # Declared admin (app/routes.py): the token was checked before this runs.
        ctx = self.ctx
        if not ctx.call(ctx.store.delete, *target):
            _comment_not_found()
        resp.status = 204


class CountResource(_ContextResource):
    """`/api/v1/{language}/articles/{article_id}/comments/count`."""

    def on_get(
        self, req: falcon.Request, resp: falcon.Response, language: str, article_id: str
    ) -> None:
        self.ctx.require_article(language, article_id)
        count = self.ctx.call(self.ctx.store.count, language, article_id)
        body = CommentCount(article_id=article_id, language=Language(language), count=count)
        _send(resp, body.model_dump_json().encode())

    on_head = on_get


class CountsResource(_ContextResource):
    """`/api/v1/{language}/comments/counts`: ids in the query (GET) or in the body (POST).

    The POST form is a read like the GET: no rate limit, no Idempotency-Key.
    """

    def on_get(self, req: falcon.Request, resp: falcon.Response, language: str) -> None:
        self._answer(resp, language, parse(req, CommentCountsQuery).article_id)

    on_head = on_get

    def on_post(self, req: falcon.Request, resp: falcon.Response, language: str) -> None:
        body: CommentCountsRequest = read_json(req, CommentCountsRequest)
        self._answer(resp, language, body.article_ids)

    def _answer(self, resp: falcon.Response, language: str, ids: list[str]) -> None:
        ctx = self.ctx
        known = [i for i in dict.fromkeys(ids) if ctx.article_exists(language, i)]
        found = ctx.call(ctx.store.counts, language, known) if known else {}
        counts = {i: found.get(i) for i in ids}
        body = CommentCounts(language=Language(language), counts=counts)
        _send(resp, body.model_dump_json().encode())
