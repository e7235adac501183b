"""HTTP resources of moderation, reader reports and notices (docs/api.md §12,
docs/moderation.md). Moderators' operations check, after the language (app.mount), the
token (401) and its languages (403), then parameters (422), then existence (404).
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any, NoReturn

import falcon

from app.comments import shapes
from app.comments.auth import NOTICE_TOKEN_REQUIRED, bearer, unauthorized
from app.comments.model import RateLimit, RateLimited, Unfit
from app.comments.resources import (
    CommentTarget,
    _comment_not_found,
    _ContextResource,
    _send,
    comment_target,
    rate_limit,
    too_many,
)
from app.comments.validation import plausible_id, read_json
from app.comments.wire import (
    ArticleSettings,
    Decision,
    LogPage,
    LogQuery,
    NoticeCreate,
    QueueQuery,
    ReportCreate,
    ReportReceipt,
    SettingsUpdate,
    TransparencyQuery,
)
from app.errors import APIError
from app.languages import LANGUAGES
from app.params import list_body, parse


@falcon.before(comment_target)
class ReaderWrite(_ContextResource):
    """A reader's report or notice on one comment: the body (422), the article and the
    comment (404), then the store under the shared budget of reports and notices (429)."""

    body: type[ReportCreate] | type[NoticeCreate]
    status: int

    def on_post(self, req: falcon.Request, resp: falcon.Response, target: CommentTarget) -> None:
        ctx = self.ctx
        body = read_json(req, self.body)
        ctx.require_comment(*target)
        rate = rate_limit(ctx, req, reports=True)
        try:
            answer = self.store(body, target, rate)
        except RateLimited as limited:
            raise too_many("reports and notices", rate, limited) from None
        if answer is None:
            _comment_not_found()
        _send(resp, answer, self.status)

    def store(self, body: Any, target: CommentTarget, rate: RateLimit) -> bytes | None:
        raise NotImplementedError


class ReportsResource(ReaderWrite):
    """`POST .../comments/{comment_id}/reports`: a reader's report."""

    body, status = ReportCreate, 202

    def store(self, body: ReportCreate, target: CommentTarget, rate: RateLimit) -> bytes | None:
        ctx = self.ctx
        threshold = ctx.settings.reports_to_withhold
        reason, text = body.reason.value, body.text
        if not ctx.call(ctx.store.report, *target, reason, text, rate, threshold):
            return None
        return ReportReceipt(status="received").model_dump_json().encode()


class NoticesResource(ReaderWrite):
    """`POST .../comments/{comment_id}/notices`: a notice of illegal content (DSA art. 16)."""

    body, status = NoticeCreate, 201

    def store(self, body: NoticeCreate, target: CommentTarget, rate: RateLimit) -> bytes | None:
        ctx = self.ctx
        fields = body.model_dump(exclude={"good_faith"})
        receipt = ctx.call(ctx.store.notice, *target, fields, rate)
        return None if receipt is None else receipt.model_dump_json().encode()


class NoticeResource(_ContextResource):
    """`GET /api/v1/notices/{notice_id}`: the notifier follows their notice."""

    def on_get(self, req: falcon.Request, resp: falcon.Response, notice_id: str) -> None:
        ctx = self.ctx
        token = bearer(req)
        if token is None:
            raise unauthorized(NOTICE_TOKEN_REQUIRED)
        state = None
        if plausible_id(notice_id) and token:
            state = ctx.call(
                ctx.store.notice_state, notice_id, token, ctx.settings.moderation_redress
            )
        if state is None:
            raise APIError(404, "Notice not found")
        _send(resp, state.model_dump_json().encode())


class QueueResource(_ContextResource):
    """`GET /api/v1/{language}/moderation/queue`."""

    def on_get(self, req: falcon.Request, resp: falcon.Response, language: str) -> None:
        ctx = self.ctx
        ctx.moderator(req, language)
        query = parse(req, QueueQuery)
        total, items = ctx.call(
            ctx.store.queue, language, query.queue, query.order, query.page_size, query.offset
        )
        titles: dict[str, str | None] = {}
        for item in items:
            article_id = item.stored.comment.article_id
            if article_id not in titles:
                facts = ctx.articles.facts(language, article_id)
                titles[article_id] = None if facts is None else facts.title
        body = list_body(
            query,
            [
                shapes.moderated_comment(item, titles[item.stored.comment.article_id])
                .model_dump_json()
                .encode()
                for item in items
            ],
            total,
        )
        _send(resp, body)


@falcon.before(comment_target)
class DecisionResource(_ContextResource):
    """`POST .../comments/{comment_id}/decision`."""

    def on_post(self, req: falcon.Request, resp: falcon.Response, target: CommentTarget) -> None:
        ctx = self.ctx
        language, article_id, comment_id = target
        moderator = ctx.moderator(req, language)
        decision: Decision = read_json(req, Decision)
        # The article may have left the bundle since: a decision on its comments still
        # stands, so only the comment itself must exist.
        if not plausible_id(comment_id):
            _comment_not_found()
        try:
            item = ctx.call(ctx.store.decide, *target, decision, moderator.name)
        except Unfit as unfit:
            raise _unfit(str(unfit)) from None
        if item is None:
            _comment_not_found()
        facts = ctx.articles.facts(language, article_id)
        body = shapes.moderated_comment(item, None if facts is None else facts.title)
        _send(resp, body.model_dump_json().encode())


def _unfit(message: str) -> NoReturn:
    raise APIError(422, [{"type": "value_error", "loc": ["body"], "msg": message}])


class LogResource(_ContextResource):
    """`GET /api/v1/{language}/moderation/log`."""

    def on_get(self, req: falcon.Request, resp: falcon.Response, language: str) -> None:
        ctx = self.ctx
        ctx.moderator(req, language)
        query = parse(req, LogQuery)
        items = ctx.call(ctx.store.log_page, language, query.after, query.limit)
        following = items[-1].id if items else query.after
        _send(resp, LogPage(items=items, next=following).model_dump_json(by_alias=True).encode())


class SettingsResource(_ContextResource):
    """`GET` (anyone) and `PUT` (moderators) `.../articles/{article_id}/comments/settings`."""

    def on_get(
        self, req: falcon.Request, resp: falcon.Response, language: str, article_id: str
    ) -> None:
        self.ctx.require_article(language, article_id)
        self._answer(resp, language, article_id)

    def on_put(
        self, req: falcon.Request, resp: falcon.Response, language: str, article_id: str
    ) -> None:
        ctx = self.ctx
        ctx.moderator(req, language)
        update: SettingsUpdate = read_json(req, SettingsUpdate)
        ctx.require_article(language, article_id)
        mode = None if update.mode is None else update.mode.value
        ctx.call(ctx.store.put_settings, language, article_id, mode, update.closed)
        self._answer(resp, language, article_id)

    def _answer(self, resp: falcon.Response, language: str, article_id: str) -> None:
        ctx = self.ctx
        mode, closed = ctx.call(ctx.store.settings, language, article_id)
        body = ArticleSettings(
            article_id=article_id,
            language=language,  # type: ignore[arg-type]
            mode=mode,  # type: ignore[arg-type]
            closed=closed,
            closes_at=ctx.closes_at(language, article_id),
        )
        _send(resp, body.model_dump_json().encode())


class TransparencyResource(_ContextResource):
    """`GET /api/v1/moderation/transparency`: the figures over the caller's languages."""

    def on_get(self, req: falcon.Request, resp: falcon.Response) -> None:
        ctx = self.ctx
        moderator = ctx.moderator(req, None)
        query = parse(req, TransparencyQuery)
        first, last = query.date_range
        languages = [code for code in LANGUAGES if moderator.covers(code)]
        figures = ctx.call(
            ctx.store.transparency,
            languages,
            None if first is None else _instant(first),
            None if last is None else _instant(last),
            (query.from_, query.to),
        )
        _send(resp, figures.model_dump_json(by_alias=True).encode())


_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_FIRST, _LAST = datetime.min.replace(tzinfo=UTC), datetime.max.replace(tzinfo=UTC)


def _instant(microseconds: int) -> datetime:
    """A bound of the range as a datetime; bounds past year 1 or 9999 (an offset can put
    `9999-12-31T23:59:59-12:00` there) are the first or last instant a datetime holds."""
    try:
        return _EPOCH + timedelta(microseconds=microseconds)
    except OverflowError:
        return _FIRST if microseconds < 0 else _LAST
