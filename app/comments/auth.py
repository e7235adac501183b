"""What every comment resource is made with (`Context`), and who a request comes from:
an author (their token, app/comments/authors.py), a moderator (app/comments/moderators.py)
or a reader. Tokens are never logged: the access log writes no request headers.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, TypeVar

import falcon

from app.comments.authors import AuthorTokens
from app.comments.model import Screening, StoreUnavailable
from app.comments.moderators import Moderator, Moderators
from app.comments.sql import SQLStore
from app.comments.terms import TermLists
from app.comments.validation import plausible_id
from app.config import Settings
from app.errors import APIError, article_not_found

T = TypeVar("T")
_CHALLENGE = {"WWW-Authenticate": 'Bearer realm="comments"'}
# The `detail` of a 401 for a token that is not the one the operation reads.
UNKNOWN_AUTHOR = "Unknown author token"
NOT_A_MODERATOR = "Invalid or missing moderator token"
NOTICE_TOKEN_REQUIRED = "The notice's access token is required"
MODERATOR_OR_AUTHOR_REQUIRED = "A moderator's or the author's token is required"
# By the token an operation reads (its `auth` in app/routes.py): the 401 app/openapi.py shows.
CHALLENGE_DETAILS = {
    "moderator": NOT_A_MODERATOR,
    "author": UNKNOWN_AUTHOR,
    "author?": UNKNOWN_AUTHOR,
    "notice": NOTICE_TOKEN_REQUIRED,
    "moderator|author": MODERATOR_OR_AUTHOR_REQUIRED,
}
# Rule 5: a link is any of these, in any case.
_LINK_RE = re.compile(r"https?://|www\.", re.IGNORECASE)


@dataclass(frozen=True)
class ArticleFacts:
    title: str
    published_at: datetime


ArticleCheck = Callable[[str, str], bool]
ArticleLookup = Callable[[str, str], ArticleFacts | None]


def _never(language: str, article_id: str) -> bool:
    return False


def _unknown(language: str, article_id: str) -> ArticleFacts | None:
    return None


@dataclass(frozen=True)
class Articles:
    """What comments know of the articles they hang on, by (language, id): whether one is
    served (`exists`), whether it was retracted (its comments close with it), and its title
    and publication time (moderators' queue, closing by age). app.wsgi reads them from the
    served bundle; without `retracted` and `facts`, no article is retracted or known."""

    exists: ArticleCheck
    retracted: ArticleCheck = _never
    facts: ArticleLookup = _unknown


def unauthorized(detail: str) -> APIError:
    return APIError(401, detail, _CHALLENGE)


class Context:
    """What every comment resource needs; one instance per service."""

    def __init__(self, settings: Settings, store: SQLStore, articles: Articles) -> None:
        self.settings = settings
        self.store = store
        self.articles = articles
        self.terms = TermLists(settings.moderation_terms)
        self.moderators = Moderators(settings.moderators_file, settings.admin_token)
        self._tokens: AuthorTokens | None = None
        self._tokens_lock = threading.Lock()

    def require_article(self, language: str, article_id: str) -> None:
        if not self.articles.exists(language, article_id):
            if self.articles.retracted(language, article_id):
                raise APIError(410, "Article retracted")  # comments close with the article
            raise article_not_found()

    def require_comment(self, language: str, article_id: str, comment_id: str) -> None:
        """The article (404/410), then whether the id could be one this service issued (an
        id that cannot be is a 404 without a query)."""
        self.require_article(language, article_id)
        if not plausible_id(comment_id):
            raise APIError(404, "Comment not found")

    def call(self, operation: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        try:
            return operation(*args, **kwargs)
        except StoreUnavailable:
            raise APIError(503, "Comment store unavailable") from None

    # -- who is asking ------------------------------------------------------------------

    def tokens(self) -> AuthorTokens:
        """The author tokens' key: NEWS_AUTHOR_SECRET, else the one the store generated."""
        if self._tokens is None:
            with self._tokens_lock:
                if self._tokens is None:
                    secret = self.settings.author_secret
                    if secret is not None:
                        key = secret.encode()
                    else:
                        self.call(self.store.ping)  # migrates, which reads the stored key
                        assert self.store.author_secret is not None
                        key = self.store.author_secret
                    self._tokens = AuthorTokens(key)
        return self._tokens

    def author(self, req: falcon.Request, required: bool = False) -> str | None:
        """The author whose token the request carries; None without a token (a 401 when
        `required`); a 401 for a token that is no author's."""
        token = bearer(req)
        if token is None:
            if required:
                raise unauthorized("An author token is required")
            return None
        author_id = self.tokens().author_of(token)
        if author_id is None:
            raise unauthorized(UNKNOWN_AUTHOR)
        return author_id

    def moderator(self, req: falcon.Request, language: str | None) -> Moderator:
        """The moderator the request's token names, of `language` when one is given."""
        token = bearer(req)
        found = None if token is None else self.moderators.identify(token)
        if found is None:
            raise unauthorized(NOT_A_MODERATOR)
        if language is not None and not found.covers(language):
            raise APIError(403, "Not a moderator of this language")
        return found

    # -- the create and edit rules' inputs ---------------------------------------------------

    def screening(
        self, language: str, article_id: str, author: str, content: str, create: bool = True
    ) -> Screening:
        """The rules' inputs; closing by age (rule 1) only for a create: an edit runs
        rules 2 to 7 alone."""
        return Screening(
            verdict=self.terms.verdict(language, author, content),
            has_link=_LINK_RE.search(content) is not None,
            default_mode=self.settings.moderation_mode,
            closed_by_age=create and self.closed_by_age(language, article_id),
        )

    def closes_at(self, language: str, article_id: str) -> datetime | None:
        days = self.settings.comments_close_after_days
        if days <= 0:
            return None
        facts = self.articles.facts(language, article_id)
        return None if facts is None else facts.published_at + timedelta(days=days)

    def closed_by_age(self, language: str, article_id: str) -> bool:
        closes_at = self.closes_at(language, article_id)
        return closes_at is not None and closes_at <= datetime.now(closes_at.tzinfo)


def bearer(req: falcon.Request) -> str | None:
    """The bearer token of the Authorization header; None without the header. Another scheme
    or an empty value is a token no one has (so a 401 wherever a token is read)."""
    header = req.get_header("Authorization")
    if header is None:
        return None
    scheme, _, value = header.strip().partition(" ")
    if scheme.lower() != "bearer":
        return ""
    return value.strip()
