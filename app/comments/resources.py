"""HTTP resources for the comment routes (API contract, section 4).

Every operation checks, in order: language (400), parameters and body (415/413/422),
the article (404), then the comment. Responses are never cacheable.
"""

from __future__ import annotations

import hmac
from collections.abc import Callable
from typing import Any, NoReturn, TypeVar
from urllib.parse import quote

import falcon
import orjson

from app.comments.clients import client_identity
from app.comments.model import (
    CommentStore,
    IdempotencyConflict,
    ParentNotFound,
    RateLimit,
    RateLimited,
    StoreUnavailable,
)
from app.comments.validation import parent_not_found, plausible_id, read_create
from app.config import Settings
from app.errors import JSON_TYPE, APIError, article_not_found, error_item, validation_error
from app.languages import LANGUAGE_SET
from app.params import choice_param, page_params

T = TypeVar("T")
ArticleExists = Callable[[str, str], bool]

MAX_BATCH = 100


class Context:
    """What every comment resource needs; one instance per service."""

    def __init__(
        self, settings: Settings, store: CommentStore, article_exists: ArticleExists
    ) -> None:
        self.settings = settings
        self.store = store
        self.article_exists = article_exists

    def begin(self, resp: falcon.Response, language: str) -> None:
        # Set first so that error responses are not cached either.
        resp.set_header("Cache-Control", "no-store")
        if language not in LANGUAGE_SET:
            raise APIError(400, f"Unsupported language: {language}")

    def require_article(self, language: str, article_id: str) -> None:
        if not self.article_exists(language, article_id):
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
        ctx.begin(resp, language)
        page = page_params(req)
        order = choice_param(req, "order", ("newest", "oldest"))
        ctx.require_article(language, article_id)
        total, comments = ctx.call(
            ctx.store.list_page, language, article_id, order, page.page_size, page.offset
        )
        _send(resp, page.list_body([orjson.dumps(c.to_json()) for c in comments], total))

    on_head = on_get

    def on_post(
        self, req: falcon.Request, resp: falcon.Response, language: str, article_id: str
    ) -> None:
        ctx = self.ctx
        ctx.begin(resp, language)
        new = read_create(req, language, article_id)
        ctx.require_article(language, article_id)
        rate = RateLimit(
            ctx.settings.comment_rate_count,
            ctx.settings.comment_rate_seconds,
            client_identity(req, ctx.settings.trusted_proxies),
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
        _send(resp, orjson.dumps(comment.to_json()), 201)


class CommentResource(_ContextResource):
    """`/api/v1/{language}/articles/{article_id}/comments/{comment_id}`: get and delete."""

    def on_get(
        self,
        req: falcon.Request,
        resp: falcon.Response,
        language: str,
        article_id: str,
        comment_id: str,
    ) -> None:
        ctx = self.ctx
        ctx.begin(resp, language)
        ctx.require_article(language, article_id)
        if not plausible_id(comment_id):
            _comment_not_found()
        comment = ctx.call(ctx.store.get, language, article_id, comment_id)
        if comment is None:
            _comment_not_found()
        _send(resp, orjson.dumps(comment.to_json()))

    on_head = on_get

    def on_delete(
        self,
        req: falcon.Request,
        resp: falcon.Response,
        language: str,
        article_id: str,
        comment_id: str,
    ) -> None:
        ctx = self.ctx
        ctx.begin(resp, language)
        self._authorize(req)
        ctx.require_article(language, article_id)
        if not plausible_id(comment_id) or not ctx.call(
            ctx.store.delete, language, article_id, comment_id
        ):
            _comment_not_found()
        resp.status = 204

    def _authorize(self, req: falcon.Request) -> None:
        challenge = {"WWW-Authenticate": 'Bearer realm="comments"'}
        token = self.ctx.settings.admin_token
        if not token:
            raise APIError(
                401, "Comment deletion is disabled: NEWS_ADMIN_TOKEN is not set", challenge
            )
        scheme, _, given = (req.get_header("Authorization") or "").strip().partition(" ")
        # compare_digest: the time taken must not reveal how much of the token matched.
        if scheme.lower() != "bearer" or not hmac.compare_digest(
            given.strip().encode(), token.encode()
        ):
            raise APIError(401, "Invalid or missing admin token", challenge)


class CountResource(_ContextResource):
    """`/api/v1/{language}/articles/{article_id}/comments/count`."""

    def on_get(
        self, req: falcon.Request, resp: falcon.Response, language: str, article_id: str
    ) -> None:
        ctx = self.ctx
        ctx.begin(resp, language)
        ctx.require_article(language, article_id)
        count = ctx.call(ctx.store.count, language, article_id)
        _send(resp, orjson.dumps({"article_id": article_id, "language": language, "count": count}))

    on_head = on_get


class CountsResource(_ContextResource):
    """`/api/v1/{language}/comments/counts?article_id=A&article_id=B`."""

    def on_get(self, req: falcon.Request, resp: falcon.Response, language: str) -> None:
        ctx = self.ctx
        ctx.begin(resp, language)
        raw = req.params.get("article_id")
        ids: list[str] = [] if raw is None else [raw] if isinstance(raw, str) else list(raw)
        loc = ("query", "article_id")
        if not ids:
            raise validation_error(error_item(loc, "Field required", "missing", input=None))
        if len(ids) > MAX_BATCH:
            raise validation_error(
                error_item(
                    loc,
                    f"List should have at most {MAX_BATCH} items after validation, not {len(ids)}",
                    "too_long",
                    input=ids,
                    ctx={"field_type": "List", "max_length": MAX_BATCH, "actual_length": len(ids)},
                )
            )
        known = [i for i in dict.fromkeys(ids) if ctx.article_exists(language, i)]
        found = ctx.call(ctx.store.counts, language, known) if known else {}
        counts = {i: found.get(i) for i in ids}
        _send(resp, orjson.dumps({"language": language, "counts": counts}))

    on_head = on_get
