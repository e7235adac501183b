"""The route table: every path the service answers, declared once.

Each `Route` (app/declarations.py) holds its path, how its resource is made from the app's
shared parts (`Shared`), its operations with their documentation texts and error statuses,
its cache policy, and whether the response cache keeps its answers (`keep`).
app/mount.py mounts the table on Falcon and applies what each declaration asks of every
request (Cache-Control: no-store, the language check, the admin token, the answers kept);
app/openapi.py writes /openapi.json from the same entries and the models they name, so the
two cannot disagree.

Each operation lists its error statuses (`errors`), from the groups of app/declarations.py
(400 for a path with `{language}`, 404 and 410 where the article is looked up, 422 where a
query, header or body model is validated, 413/415 with a body, 406 on "public" routes, 503
for comment operations) and its own.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import orjson
from pydantic import BaseModel

from app import models as m
from app.bundle.store import BundleStore
from app.comments import comment_wire as cw
from app.comments import moderation_resources as moderation
from app.comments import resources as comments
from app.comments import wire as w
from app.comments.auth import Context
from app.declarations import (
    ARTICLE,
    BODY,
    CODINGS,
    LANGUAGE,
    RETRACTION_NOTICE,
    STORE,
    VALIDATED,
    Operation,
    Route,
    Shared,
    Texts,
    error_statuses,
)
from app.metrics import MetricsResource
from app.openapi import openapi_document
from app.resources import articles, docs, feeds, moderation_page, ops
from app.resources.articles import BundleResource

API = "/api/v1/{language}"


def _not_news(fields: Mapping[str, str]) -> bool:
    """The news sitemap follows the clock (its window of 48 hours), the language pages do
    not."""
    return fields["sitemap"] != "news"


def _article_links(body_id: str) -> dict[str, Any]:
    """From an article to its comments: `body_id` is where the response names one id."""
    article = {"language": "$request.path.language", "article_id": body_id}
    return {
        "CommentOnArticle": {"operationId": "createComment", "parameters": article},
        "ListArticleComments": {"operationId": "listComments", "parameters": article},
    }


def _created_links() -> dict[str, Any]:
    """What a client (or a stateful fuzzer) can do next with the comment it created."""
    same_article = {
        "language": "$request.path.language",
        "article_id": "$request.path.article_id",
    }
    this_comment = {**same_article, "comment_id": "$response.body#/id"}
    return {
        "GetComment": {"operationId": "getComment", "parameters": this_comment},
        "DeleteComment": {"operationId": "deleteComment", "parameters": this_comment},
        "ListComments": {"operationId": "listComments", "parameters": same_article},
        "CountComments": {"operationId": "countComments", "parameters": same_article},
        "ReplyToComment": {
            "operationId": "createComment",
            "parameters": same_article,
            "requestBody": {
                "author": "reader",
                "content": "a reply",
                "parent_id": "$response.body#/id",
            },
        },
    }


_CREATE_ERRORS = {
    401: "Unknown author token.",
    403: "Comments are closed.",
    409: "Duplicate comment, or an Idempotency-Key reused for a different comment or for one"
    " since erased.",
    429: "Rate limit exceeded.",
}
_UNKNOWN_AUTHOR = {401: "No token, or one that is no author's."}
_MODERATOR = {
    401: "No token, or one that is no moderator's.",
    403: "Not a moderator of this language.",
}
_COMMENT_404 = {404: "Article not found, or Comment not found."}
_REPORT_ERRORS = {**_COMMENT_404, 429: "Too many reports and notices from this client."}
_REPORT_DETAILS = {
    404: "Comment not found",
    429: "Too many reports and notices: at most 20 per 60 seconds; retry in 12 seconds",
}
_ARRAY_OF_SUMMARIES = {"type": "array", "items": {"$ref": "#/components/schemas/ArticleSummary"}}
_ATOM_EXAMPLE = (
    '<?xml version="1.0" encoding="utf-8"?>\n<feed xmlns="http://www.w3.org/2005/Atom"'
    ' xml:lang="en">\n<id>tag:news-article-api,2026:en/feed</id>\n<title>News (en)</title>'
    "\n<updated>2026-11-20T08:30:00Z</updated>\n...</feed>\n"
)
_RSS_EXAMPLE = (
    '<?xml version="1.0" encoding="utf-8"?>\n<rss version="2.0">\n<channel>\n'
    "<title>News (en)</title>\n...</channel>\n</rss>\n"
)
_SITEMAP_EXAMPLE = (
    '<?xml version="1.0" encoding="utf-8"?>\n<urlset'
    ' xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">\n<url><loc>'
    "http://127.0.0.1:8000/api/v1/en/articles/en-0001</loc><lastmod>2026-11-20T08:30:00Z"
    "</lastmod></url>\n</urlset>\n"
)
_XML = {"type": "string", "examples": [_SITEMAP_EXAMPLE]}
_JSON_FEED = {
    "type": "object",
    "description": "JSON Feed 1.1 (https://www.jsonfeed.org/version/1.1/).",
    "required": ["version", "title", "items"],
    "properties": {
        "version": {"type": "string", "const": "https://jsonfeed.org/version/1.1"},
        "title": {"type": "string"},
        "home_page_url": {"type": "string"},
        "feed_url": {"type": "string"},
        "language": {"type": "string"},
        "items": {"type": "array", "items": {"type": "object"}},
    },
    "examples": [
        {
            "version": "https://jsonfeed.org/version/1.1",
            "title": "News (en)",
            "items": [
                {
                    "id": "tag:news-article-api,2026:en/articles/en-0001",
                    "url": "http://127.0.0.1:8000/api/v1/en/articles/en-0001",
                    "title": "A title",
                    "content_text": "Body text.",
                }
            ],
        }
    ],
}
_NO_SITEMAP = {404: "No such sitemap (or page)."}
_CATEGORIES = {"type": "array", "items": {"type": "string"}, "examples": [["economy", "경제"]]}


def _public(
    path: str,
    resource: Callable[[BundleStore], BundleResource],
    tag: str,
    operation: Operation,
    keep: Callable[[Mapping[str, str]], bool] | None = None,
) -> Route:
    """A "public" route: one read of the bundle, its `resource` made from the app's store."""
    return Route(path, lambda s: resource(s.store), tag, (operation,), cache="public", keep=keep)


def _feed(kind: str, operation_id: str, texts: Texts, schema: dict[str, Any], media: str) -> Route:
    """`/api/v1/{language}/feed.<kind>`: every feed takes the same query (`category`) and
    answers the same errors, in its own format (`media`)."""
    return _public(
        f"{API}/feed.{kind}",
        lambda store: feeds.Feed(store, kind),
        "feeds",
        Operation(
            operation_id,
            texts,
            schema,
            query=m.FeedQuery,
            media_type=media,
            errors=error_statuses(LANGUAGE, CODINGS, VALIDATED),
        ),
    )


def _reader_write(
    kind: str,
    resource: type[moderation.ReaderWrite],
    operation_id: str,
    texts: Texts,
    receipt: type[BaseModel],
) -> Route:
    """`POST .../comments/{comment_id}/<kind>`: a reader's report or notice, whose body and
    success status are its resource's (app.comments.moderation_resources.ReaderWrite), under
    the budget of reports and notices the two share (429)."""
    return Route(
        f"{API}/articles/{{article_id}}/comments/{{comment_id}}/{kind}",
        lambda s: resource(s.comments.context),
        "moderation",
        (
            Operation(
                operation_id,
                texts,
                receipt,
                method="post",
                status=resource.status,
                body=resource.body,
                errors=error_statuses(LANGUAGE, ARTICLE, VALIDATED, BODY, STORE, _REPORT_ERRORS),
                error_details=_REPORT_DETAILS,
            ),
        ),
    )


def _moderation_read(
    name: str,
    resource: Callable[[Context], object],
    operation_id: str,
    texts: Texts,
    response: type[BaseModel],
    query: type[BaseModel],
) -> Route:
    """`GET /api/v1/{language}/moderation/<name>`: what a moderator of the language reads
    there, a page at a time (`query`)."""
    return Route(
        f"{API}/moderation/{name}",
        lambda s: resource(s.comments.context),
        "moderation",
        (
            Operation(
                operation_id,
                texts,
                response,
                query=query,
                errors=error_statuses(LANGUAGE, VALIDATED, STORE, _MODERATOR),
                auth="moderator",
            ),
        ),
    )


def _openapi(shared: Shared) -> ops.OpenAPI:
    """The document of this table, written when the route is mounted (the table is
    complete by then)."""
    return ops.OpenAPI(orjson.dumps(openapi_document(ROUTES)))


ROUTES: tuple[Route, ...] = (
    _public(
        f"{API}/articles",
        articles.ArticleCollection,
        "articles",
        Operation(
            "listArticles",
            Texts(
                "List articles, newest first",
                "Articles of one language by `published_at` descending, then `id`, optionally"
                " of one category. A page past the end is empty and keeps the true `total`.",
                "A page of articles.",
            ),
            m.ArticleList,
            query=m.ArticleListQuery,
            response_headers=("Link", "Last-Modified"),
            links=_article_links("$response.body#/items/0/id"),
            errors=error_statuses(LANGUAGE, CODINGS, VALIDATED),
        ),
    ),
    _public(
        f"{API}/articles/latest",
        articles.LatestArticles,
        "articles",
        Operation(
            "latestArticles",
            Texts(
                "Latest articles",
                "The newest articles of one language in their short form.",
                "Newest articles first.",
            ),
            _ARRAY_OF_SUMMARIES,
            query=m.LatestQuery,
            response_headers=("Last-Modified",),
            # Never empty while the language has an article (unlike a filtered list):
            # the dependable start of the article -> comments flow.
            links=_article_links("$response.body#/0/id"),
            errors=error_statuses(LANGUAGE, CODINGS, VALIDATED),
        ),
    ),
    _public(
        f"{API}/articles/search",
        articles.ArticleSearch,
        "articles",
        Operation(
            "searchArticles",
            Texts(
                "Search articles by keyword",
                "Every term must match title, summary, content or tags; case, accents and"
                " word forms are ignored, CJK text matches as a character sequence and"
                " simplified and traditional Chinese find each other. Most relevant first.",
                "A page of matching articles.",
            ),
            m.SearchResults,
            query=m.SearchQuery,
            response_headers=("Link", "Last-Modified"),
            errors=error_statuses(LANGUAGE, CODINGS, VALIDATED),
        ),
    ),
    _public(
        f"{API}/articles/{{article_id}}",
        articles.ArticleItem,
        "articles",
        Operation(
            "getArticle",
            Texts(
                "Get one article",
                "The article with this id in this language. A retracted article answers 410"
                " with its notice.",
                "The article.",
            ),
            m.Article,
            response_headers=("Last-Modified",),
            links=_article_links("$response.body#/id"),
            errors=error_statuses(LANGUAGE, {404: ARTICLE[404]}, RETRACTION_NOTICE, CODINGS),
            gone="notice",
        ),
    ),
    _public(
        f"{API}/categories",
        articles.Categories,
        "articles",
        Operation(
            "listCategories",
            Texts(
                "Categories of a language",
                "Every category that has at least one article, by Unicode code point.",
                "Categories.",
            ),
            _CATEGORIES,
            errors=error_statuses(LANGUAGE, CODINGS),
        ),
    ),
    _public(
        f"{API}/corrections",
        articles.CorrectionsLog,
        "articles",
        Operation(
            "listCorrections",
            Texts(
                "Corrections log of a language",
                "Every public correction and retraction of the language's articles: `at`"
                " descending, then `article_id`, then `kind` (`correction` before"
                " `retraction`). A retracted article's corrections stay beside its"
                " retraction; an article removed from the sources leaves the log.",
                "A page of the corrections log.",
            ),
            m.CorrectionList,
            query=m.PageQuery,
            response_headers=("Link",),
            errors=error_statuses(LANGUAGE, CODINGS, VALIDATED),
        ),
    ),
    _public(
        f"{API}/changes",
        articles.Changes,
        "articles",
        Operation(
            "listChanges",
            Texts(
                "Change feed for mirrors",
                "Every change of what `GET` of an article answers (published, changed,"
                " corrected, retracted, removed), in publish order, each article at most"
                " once per answer with its state now. Without `since`: every current"
                " article (`upsert`) and every retraction, then what changed after the"
                " walk began. Follow `next` while `more` is true, then poll with the last"
                " `next`. A cursor from a newer bundle of the same lineage gets no items and"
                " the same `next`. Changes of the last `NEWS_CHANGES_RETENTION_DAYS` days"
                " (default 90) are kept.",
                "A page of changes.",
            ),
            m.ChangeList,
            query=m.ChangesQuery,
            errors=error_statuses(
                LANGUAGE,
                CODINGS,
                VALIDATED,
                {
                    410: "Cursor expired: not a cursor, of another lineage or language, or"
                    " before the oldest change kept. Start again without `since`."
                },
            ),
            gone="cursor",
        ),
    ),
    _feed(
        "atom",
        "getAtomFeed",
        Texts(
            "Atom feed of a language",
            "The newest 50 articles (of one category with `category`) as Atom 1.0 (RFC 4287)."
            " Entry ids are tag URIs of the language and article id: they never change."
            " Links use the public article URL the bundle was built with. An unknown"
            " category gives a valid feed without entries.",
            "An Atom 1.0 feed.",
        ),
        {"type": "string", "examples": [_ATOM_EXAMPLE]},
        "application/atom+xml",
    ),
    _feed(
        "rss",
        "getRssFeed",
        Texts(
            "RSS feed of a language",
            "The same articles as the Atom feed, as RSS 2.0; `guid` is the entry id.",
            "An RSS 2.0 feed.",
        ),
        {"type": "string", "examples": [_RSS_EXAMPLE]},
        "application/rss+xml",
    ),
    _feed(
        "json",
        "getJsonFeed",
        Texts(
            "JSON Feed of a language",
            "The same articles as the Atom feed, as JSON Feed 1.1"
            " (https://www.jsonfeed.org/version/1.1/).",
            "A JSON Feed 1.1 document.",
        ),
        _JSON_FEED,
        "application/feed+json",
    ),
    _public(
        "/sitemap.xml",
        feeds.SitemapIndex,
        "sitemaps",
        Operation(
            "getSitemapIndex",
            Texts(
                "Sitemap index",
                "Every page of every language's sitemap (50,000 URLs a page), then the news"
                " sitemap.",
                "A sitemaps.org sitemap index.",
            ),
            _XML,
            media_type="application/xml",
            errors=error_statuses(CODINGS),
        ),
    ),
    _public(
        "/sitemaps/{sitemap}.xml",
        feeds.Sitemap,
        "sitemaps",
        Operation(
            "getSitemap",
            Texts(
                "A sitemap page, or the news sitemap",
                "`{language}.xml` and `{language}-{page}.xml`: every article's public URL"
                " with `lastmod` = `updated_at` and `xhtml:link` hreflang alternates for"
                " itself and its translations, newest first. `news.xml`: Google News sitemap"
                " of the articles published in the 48 hours before the newest article of the"
                " bundle, at most 1,000.",
                "A sitemaps.org urlset.",
            ),
            _XML,
            media_type="application/xml",
            errors=error_statuses(CODINGS, _NO_SITEMAP),
        ),
        keep=_not_news,
    ),
    Route(
        f"{API}/articles/{{article_id}}/comments",
        lambda s: comments.CommentsResource(s.comments.context),
        "comments",
        (
            Operation(
                "listComments",
                Texts(
                    "List the comments of an article",
                    "Newest first, or oldest first with `order=oldest`.",
                    "A page of comments.",
                ),
                cw.CommentList,
                query=cw.CommentListQuery,
                response_headers=("Link",),
                errors=error_statuses(LANGUAGE, ARTICLE, VALIDATED, STORE),
            ),
            Operation(
                "createComment",
                Texts(
                    "Comment on an article",
                    "A 201 means the comment is durably stored, in the status the rules give"
                    " it (docs/moderation.md). Retrying with the same `Idempotency-Key` returns"
                    " the first comment and creates nothing. Rate limited per client across all"
                    " instances. With `Authorization: Bearer <author_token>` the comment is the"
                    " same author's; without, a new author and token are made.",
                    "The comment, durably stored.",
                ),
                w.CreatedComment,
                method="post",
                status=201,
                body=cw.CommentCreate,
                headers=cw.CommentCreateHeaders,
                errors=error_statuses(LANGUAGE, ARTICLE, VALIDATED, BODY, STORE, _CREATE_ERRORS),
                response_headers=("Location", "Idempotent-Replayed"),
                links=_created_links(),
                auth="author?",
                error_details={403: "Comments are closed", 409: "Duplicate comment"},
            ),
        ),
    ),
    Route(
        f"{API}/articles/{{article_id}}/comments/count",
        lambda s: comments.CountResource(s.comments.context),
        "comments",
        (
            Operation(
                "countComments",
                Texts(
                    "Count the comments of an article",
                    "The total the comment list would report.",
                    "The count.",
                ),
                cw.CommentCount,
                errors=error_statuses(LANGUAGE, ARTICLE, STORE),
            ),
        ),
    ),
    Route(
        f"{API}/articles/{{article_id}}/comments/{{comment_id}}",
        lambda s: comments.CommentResource(s.comments.context),
        "comments",
        (
            Operation(
                "getComment",
                Texts(
                    "Get one comment",
                    "One visible comment of the article. With its author's token"
                    " (`Authorization: Bearer <author_token>`): the author's own comment in any"
                    " status but `erased`, as an `OwnComment` (the `Comment` with `status` and"
                    " the statement of reasons, `moderation`).",
                    "The comment.",
                ),
                {
                    "anyOf": [
                        {"$ref": "#/components/schemas/Comment"},
                        {"$ref": "#/components/schemas/OwnComment"},
                    ]
                },
                errors=error_statuses(
                    LANGUAGE, ARTICLE, STORE, {**_COMMENT_404, **_UNKNOWN_AUTHOR}
                ),
                auth="author?",
            ),
            Operation(
                "editComment",
                Texts(
                    "Edit one's comment (author)",
                    "Within NEWS_COMMENT_EDIT_SECONDS of its creation; the create rules 2 to 7"
                    " run again on the new text (docs/moderation.md).",
                    "The edited comment.",
                ),
                w.OwnComment,
                method="patch",
                body=w.CommentEdit,
                errors=error_statuses(
                    LANGUAGE,
                    ARTICLE,
                    VALIDATED,
                    BODY,
                    STORE,
                    {
                        **_COMMENT_404,
                        **_UNKNOWN_AUTHOR,
                        409: "Edit window closed, a rejected comment, or a duplicate.",
                        429: "Too many creates and edits from this client.",
                    },
                ),
                auth="author",
                error_details={404: "Comment not found", 409: "Edit window closed"},
            ),
            Operation(
                "deleteComment",
                Texts(
                    "Erase a comment (its author or a moderator)",
                    "With the author's token or a moderator's (NEWS_ADMIN_TOKEN is the"
                    " moderator `admin`): the comment becomes `erased`, its author and content"
                    " leave the store, and it disappears from list, count and get.",
                    "Erased.",
                ),
                None,
                method="delete",
                status=204,
                errors=error_statuses(
                    LANGUAGE,
                    ARTICLE,
                    STORE,
                    {
                        **_COMMENT_404,
                        401: "No token, or one that is neither a moderator's nor an author's.",
                        403: "Not a moderator of this language.",
                    },
                ),
                auth="moderator|author",
                error_details={404: "Comment not found"},
            ),
        ),
    ),
    _reader_write(
        "reports",
        moderation.ReportsResource,
        "reportComment",
        Texts(
            "Report a comment (reader)",
            "One client's reports of one comment count once; when the distinct"
            " reporting clients since the last decision reach NEWS_REPORTS_TO_WITHHOLD,"
            " the comment is withheld for a moderator. Only visible comments can be"
            " reported. Rate limited with notices (NEWS_REPORT_RATE_LIMIT).",
            "Received.",
        ),
        w.ReportReceipt,
    ),
    _reader_write(
        "notices",
        moderation.NoticesResource,
        "sendNotice",
        Texts(
            "Send a notice of illegal content",
            "Digital Services Act article 16: an explanation, optionally the law,"
            " a name and an email, and a statement of good faith. The receipt's"
            " `access_token` follows the notice at `GET /api/v1/notices/{notice_id}`.",
            "The receipt.",
        ),
        w.NoticeReceipt,
    ),
    Route(
        f"{API}/articles/{{article_id}}/comments/{{comment_id}}/decision",
        lambda s: moderation.DecisionResource(s.comments.context),
        "moderation",
        (
            Operation(
                "decideComment",
                Texts(
                    "Decide on a comment (moderator)",
                    "`approve` (visible, reports cleared), `reject` with a reason (rejected),"
                    " `feature` or `unfeature` a visible comment; optionally settling one of"
                    " its notices (`illegal` needs `reject` with `illegal_content`).",
                    "The comment as moderators see it.",
                ),
                w.ModeratedComment,
                method="post",
                body=w.Decision,
                errors=error_statuses(
                    LANGUAGE,
                    VALIDATED,
                    BODY,
                    STORE,
                    {**_MODERATOR, 404: "Comment not found (or erased)."},
                ),
                auth="moderator",
                error_details={404: "Comment not found"},
            ),
        ),
    ),
    Route(
        f"{API}/articles/{{article_id}}/comments/settings",
        lambda s: moderation.SettingsResource(s.comments.context),
        "moderation",
        (
            Operation(
                "getCommentSettings",
                Texts(
                    "Comment settings of an article",
                    "Its own mode (null: NEWS_MODERATION_MODE), whether it is closed, and when"
                    " comments close by age.",
                    "The settings.",
                ),
                w.ArticleSettings,
                errors=error_statuses(LANGUAGE, ARTICLE, STORE),
            ),
            Operation(
                "putCommentSettings",
                Texts(
                    "Set an article's comment settings (moderator)",
                    "`mode` (null: the default) and `closed`.",
                    "The settings now.",
                ),
                w.ArticleSettings,
                method="put",
                body=w.SettingsUpdate,
                errors=error_statuses(LANGUAGE, ARTICLE, VALIDATED, BODY, STORE, _MODERATOR),
                auth="moderator",
            ),
        ),
    ),
    _moderation_read(
        "queue",
        moderation.QueueResource,
        "moderationQueue",
        Texts(
            "A moderation queue (moderator)",
            "`pending`, `withheld`, `reported`, `notices` or `rejected`, oldest first.",
            "A page of the queue.",
        ),
        w.ModerationQueue,
        w.QueueQuery,
    ),
    _moderation_read(
        "log",
        moderation.LogResource,
        "moderationLog",
        Texts(
            "The moderation log (moderator)",
            "One entry per action, oldest first; follow it with `after=next`.",
            "Entries after `after`.",
        ),
        w.LogPage,
        w.LogQuery,
    ),
    Route(
        "/api/v1/moderation/transparency",
        lambda s: moderation.TransparencyResource(s.comments.context),
        "moderation",
        (
            Operation(
                "moderationTransparency",
                Texts(
                    "Transparency figures (moderator)",
                    "Notices, removals and reports over the caller's languages within the"
                    " range: the figures of a DSA transparency report.",
                    "The figures.",
                ),
                w.Transparency,
                query=w.TransparencyQuery,
                errors=error_statuses(VALIDATED, STORE, {401: _MODERATOR[401]}),
                auth="moderator",
            ),
        ),
    ),
    Route(
        "/api/v1/notices/{notice_id}",
        lambda s: moderation.NoticeResource(s.comments.context),
        "moderation",
        (
            Operation(
                "getNotice",
                Texts(
                    "Follow a notice (its notifier)",
                    "With the receipt's `access_token`: received or decided, and the decision.",
                    "The notice's state.",
                ),
                w.NoticeState,
                errors=error_statuses(
                    STORE, {401: "No token.", 404: "No such notice, or a wrong token."}
                ),
                auth="notice",
                error_details={404: "Notice not found"},
            ),
        ),
    ),
    Route(
        "/api/v1/comments/mine",
        lambda s: comments.MineResource(s.comments.context),
        "comments",
        (
            Operation(
                "myComments",
                Texts(
                    "One's comments (author)",
                    "Every comment of the author's token, in every language, with its status:"
                    " data access and portability.",
                    "The author's comments.",
                ),
                w.OwnComments,
                errors=error_statuses(STORE, _UNKNOWN_AUTHOR),
                auth="author",
            ),
            Operation(
                "eraseMyComments",
                Texts(
                    "Erase all of one's comments (author)",
                    "Every comment of the author's token becomes `erased`.",
                    "Erased.",
                ),
                None,
                method="delete",
                status=204,
                errors=error_statuses(STORE, _UNKNOWN_AUTHOR),
                auth="author",
            ),
        ),
    ),
    Route(
        f"{API}/comments/counts",
        lambda s: comments.CountsResource(s.comments.context),
        "comments",
        (
            Operation(
                "countCommentsBatch",
                Texts(
                    "Count the comments of several articles",
                    "Repeat `article_id` 1 to 100 times. For many or long ids use the POST form:"
                    " a request line holds at most 8190 bytes.",
                    "Counts in request order, each id once; null for an id that is not an article.",
                ),
                cw.CommentCounts,
                query=cw.CommentCountsQuery,
                errors=error_statuses(LANGUAGE, VALIDATED, STORE),
            ),
            Operation(
                "countCommentsBatchPost",
                Texts(
                    "Count the comments of several articles (ids in the body)",
                    "Answers exactly as the GET form. A read: not rate limited, and no"
                    " Idempotency-Key.",
                    "Counts in request order, each id once; null for an id that is not an article.",
                ),
                cw.CommentCounts,
                "post",
                body=cw.CommentCountsRequest,
                errors=error_statuses(LANGUAGE, VALIDATED, BODY, STORE),
            ),
        ),
    ),
    Route(
        "/health",
        lambda s: ops.Health(),
        "operations",
        (
            Operation(
                "health",
                Texts("Liveness", "200 while the process runs.", "The process is running."),
                m.Health,
                errors=error_statuses(),
            ),
        ),
    ),
    Route(
        "/ready",
        lambda s: ops.Ready(s.store, s.comments.ready_problem),
        "operations",
        (
            Operation(
                "ready",
                Texts(
                    "Readiness",
                    "200 when the bundle is loaded whole (no file of it found damaged on disk)"
                    " and the comment store answers.",
                    "Ready to serve.",
                ),
                m.Ready,
                errors=error_statuses(
                    {503: "Not ready: bundle files damaged, or the comment store is down."}
                ),
            ),
        ),
    ),
    Route(
        "/openapi.json",
        _openapi,
        "operations",
        (
            Operation(
                "openapi",
                Texts(
                    "This document",
                    "The OpenAPI 3.1 description of every operation.",
                    "The OpenAPI document.",
                ),
                m.OpenAPIDocument,
                errors=error_statuses(),
            ),
        ),
        cache=None,
    ),
    Route(
        "/metrics",
        lambda s: MetricsResource(s.metrics),
        "operations",
        (
            Operation(
                "metrics",
                Texts(
                    "Prometheus metrics",
                    "Requests, latencies and bundle state, summed over the instance's workers"
                    " (docs/operations.md). Never cached.",
                    "Prometheus text exposition format.",
                ),
                {"type": "string"},
                media_type="text/plain",
                errors=error_statuses(),
            ),
        ),
    ),
    Route("/docs", lambda s: docs.DocsPage(), "operations", (), cache=None, documented=False),
    Route(
        "/docs/{asset}",
        lambda s: docs.docs_assets(),
        "operations",
        (),
        cache=None,
        documented=False,
    ),
    # The moderators' page over the section 12 API (app/resources/moderation_page.py).
    Route(
        "/moderation",
        lambda s: moderation_page.ModerationPage(),
        "operations",
        (),
        cache=None,
        documented=False,
    ),
    Route(
        "/moderation/{asset}",
        lambda s: moderation_page.moderation_assets(),
        "operations",
        (),
        cache=None,
        documented=False,
    ),
)
