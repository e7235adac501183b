"""HTTP resources for the comment routes (docs/api.md §4 and §12).

Every operation checks, in order: language (400), the token where it needs one (401/403),
parameters and body (415/413/422), the article (404), then the comment. The language and
`Cache-Control: no-store` on every answer come from the routes' declarations (app/routes.py,
applied by app.mount before a responder runs); tokens are read here (app/comments/auth.py).
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any, NoReturn
from urllib.parse import quote

import falcon

from app.comments import shapes
from app.comments.auth import MODERATOR_OR_AUTHOR_REQUIRED, Context, bearer, unauthorized
from app.comments.clients import client_identity
from app.comments.comment_wire import (
    CommentCount,
    CommentCounts,
    CommentCountsQuery,
    CommentCountsRequest,
    CommentListQuery,
)
from app.comments.model import (
    IdempotencyConflict,
    ParentNotFound,
    RateLimit,
    RateLimited,
    Refused,
    Stored,
)
from app.comments.validation import parent_not_found, read_create, read_json
from app.comments.wire import CommentEdit, CreatedComment, OwnComment, OwnComments, Status
from app.errors import JSON_TYPE, APIError
from app.links import set_link
from app.models import Language
from app.params import list_body, parse


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

    def on_post(
        self, req: falcon.Request, resp: falcon.Response, language: str, article_id: str
    ) -> None:
        ctx = self.ctx
        author_id = ctx.author(req)
        new = read_create(req, language, article_id)
        ctx.require_article(language, article_id)
        rate = rate_limit(ctx, req)
        screening = ctx.screening(language, article_id, new.author, new.content)
        try:
            created = ctx.call(
                ctx.store.create, replace(new, author_id=author_id, screening=screening), rate
            )
        except ParentNotFound:
            raise parent_not_found(new.parent_id or "") from None
        except RateLimited as limited:
            raise too_many("comments", rate, limited) from None
        except IdempotencyConflict as conflict:
            raise APIError(409, str(conflict)) from None
        except Refused as refused:
            raise APIError(refused.status, refused.detail) from None
        stored = created.stored
        assert stored.author_id is not None
        comment = stored.comment
        resp.set_header("Location", comment_location(language, article_id, comment.id))
        if created.replayed:
            resp.set_header("Idempotent-Replayed", "true")
        body = CreatedComment(
            **dict(comment),
            status=Status(stored.status),
            moderation=shapes.public_moderation(stored),
            author_token=ctx.tokens().token(stored.author_id),
        )
        _send(resp, body.model_dump_json().encode(), 201)


CommentTarget = tuple[str, str, str]  # (language, article_id, comment_id)


def rate_limit(ctx: Context, req: falcon.Request, reports: bool = False) -> RateLimit:
    """This request's client and its budget: NEWS_COMMENT_RATE_LIMIT (creates and edits) or,
    with `reports`, NEWS_REPORT_RATE_LIMIT (reports and notices)."""
    settings = ctx.settings
    count, seconds = (
        (settings.report_rate_count, settings.report_rate_seconds)
        if reports
        else (settings.comment_rate_count, settings.comment_rate_seconds)
    )
    client = client_identity(req, settings.trusted_proxies, settings.trust_unix_peers)
    return RateLimit(count, seconds, client)


def too_many(what: str, rate: RateLimit, limited: RateLimited) -> APIError:
    return APIError(
        429,
        f"Too many {what}: at most {rate.count} per {rate.seconds} seconds;"
        f" retry in {limited.retry_after} seconds",
        headers={"Retry-After": str(limited.retry_after)},
    )


def comment_target(
    req: falcon.Request, resp: falcon.Response, resource: object, params: dict[str, Any]
) -> None:
    """`@falcon.before(comment_target)`: the responders of a resource under
    `.../comments/{comment_id}` take the path as one `target` (a CommentTarget)."""
    params["target"] = params.pop("language"), params.pop("article_id"), params.pop("comment_id")


@falcon.before(comment_target)
class CommentResource(_ContextResource):
    # Each responder checks, in the contract's order: its token (401/403), its body (422),
    # then `ctx.require_comment`: the article (404/410) and whether the id could be one this
    # service issued (an id that cannot be is answered without a query).
    """`/api/v1/{language}/articles/{article_id}/comments/{comment_id}`: get, edit, erase."""

    def on_get(self, req: falcon.Request, resp: falcon.Response, target: CommentTarget) -> None:
        ctx = self.ctx
        author_id = self._author(req)
        self.ctx.require_comment(*target)
        if author_id is not None:
            own = ctx.call(ctx.store.stored, *target)
            if own is not None and own.author_id == author_id:
                _send(resp, self._own(own))
                return
        comment = ctx.call(ctx.store.get, *target)
        if comment is None:
            _comment_not_found()
        _send(resp, comment.model_dump_json().encode())

    def on_patch(self, req: falcon.Request, resp: falcon.Response, target: CommentTarget) -> None:
        ctx = self.ctx
        author_id = ctx.author(req, required=True)
        assert author_id is not None
        body: CommentEdit = read_json(req, CommentEdit)
        self.ctx.require_comment(*target)
        language, article_id, _ = target
        # The author was screened with the comment's creation; only the new text is.
        screening = ctx.screening(language, article_id, "", body.content, create=False)
        rate = self._rate(req)
        try:
            stored = ctx.call(
                ctx.store.edit,
                *target,
                author_id,
                body.content,
                screening,
                ctx.settings.comment_edit_seconds,
                rate,
            )
        except Refused as refused:
            raise APIError(refused.status, refused.detail) from None
        except RateLimited as limited:
            raise too_many("comments", rate, limited) from None
        if stored is None:
            _comment_not_found()
        _send(resp, self._own(stored))

    def on_delete(self, req: falcon.Request, resp: falcon.Response, target: CommentTarget) -> None:
        ctx = self.ctx
        token = bearer(req)
        if token is None:
            raise unauthorized(MODERATOR_OR_AUTHOR_REQUIRED)
        moderator = ctx.moderators.identify(token)
        author_id = None
        if moderator is None:
            author_id = ctx.author(req, required=True)
        elif not moderator.covers(target[0]):
            raise APIError(403, "Not a moderator of this language")
        self.ctx.require_comment(*target)
        if moderator is not None:
            erased = ctx.call(ctx.store.erase, *target, moderator=moderator.name)
        else:
            erased = ctx.call(ctx.store.erase, *target, author_id=author_id)
        if not erased:
            _comment_not_found()
        resp.status = 204

    def _rate(self, req: falcon.Request) -> RateLimit:
        return rate_limit(self.ctx, req)

    def _author(self, req: falcon.Request) -> str | None:
        """The author of a GET's token; a moderator's token reads as a reader does."""
        token = bearer(req)
        if token is not None and token and self.ctx.moderators.identify(token) is not None:
            return None
        return self.ctx.author(req)

    def _own(self, stored: Stored) -> bytes:
        body = OwnComment(
            **dict(stored.comment),
            status=Status(stored.status),
            moderation=shapes.statement_of_reasons(stored, self.ctx.settings.moderation_redress),
        )
        return body.model_dump_json().encode()


class MineResource(_ContextResource):
    """`/api/v1/comments/mine`: the author's comments in every language (export, erasure)."""

    def on_get(self, req: falcon.Request, resp: falcon.Response) -> None:
        ctx = self.ctx
        author_id = ctx.author(req, required=True)
        assert author_id is not None
        redress = ctx.settings.moderation_redress
        items = [
            OwnComment(
                **dict(s.comment),
                status=Status(s.status),
                moderation=shapes.statement_of_reasons(s, redress),
            )
            for s in ctx.call(ctx.store.mine, author_id)
        ]
        _send(resp, OwnComments(items=items).model_dump_json().encode())

    def on_delete(self, req: falcon.Request, resp: falcon.Response) -> None:
        ctx = self.ctx
        author_id = ctx.author(req, required=True)
        assert author_id is not None
        ctx.call(ctx.store.erase_mine, author_id)
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


class CountsResource(_ContextResource):
    """`/api/v1/{language}/comments/counts`: ids in the query (GET) or in the body (POST).

    The POST form is a read like the GET: no rate limit, no Idempotency-Key.
    """

    def on_get(self, req: falcon.Request, resp: falcon.Response, language: str) -> None:
        self._answer(resp, language, parse(req, CommentCountsQuery).article_id)

    def on_post(self, req: falcon.Request, resp: falcon.Response, language: str) -> None:
        body: CommentCountsRequest = read_json(req, CommentCountsRequest)
        self._answer(resp, language, body.article_ids)

    def _answer(self, resp: falcon.Response, language: str, ids: list[str]) -> None:
        ctx = self.ctx
        known = [i for i in dict.fromkeys(ids) if ctx.articles.exists(language, i)]
        found = ctx.call(ctx.store.counts, language, known) if known else {}
        counts = {i: found.get(i) for i in ids}
        body = CommentCounts(language=Language(language), counts=counts)
        _send(resp, body.model_dump_json().encode())
