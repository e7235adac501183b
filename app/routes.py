"""The route table: every path the service answers, declared once.

Each `Route` holds its path, how its resource is made from the app's shared parts
(`Shared`), its operations with their documentation texts, and its cache policy.
app/mount.py mounts the table on Falcon and applies what each declaration asks of every
request (Cache-Control: no-store, the language check, the admin token); app/openapi.py
writes /openapi.json from the same entries and the models they name, so the two cannot
disagree.

Most error statuses follow from the route itself (app/openapi.py `_errors`): 400 wherever
the path has `{language}`, 404 for `{article_id}`, 422 where a query, header or body model
is validated, 413/415 with a body, 503 for comment operations. `errors` adds the others.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal, NamedTuple

import orjson
from pydantic import BaseModel

from app import models as m
from app.bundle.store import BundleStore
from app.comments import CommentService
from app.comments import resources as comments
from app.config import Settings
from app.http_cache import CachePolicy
from app.metrics import Metrics, MetricsResource
from app.resources import articles, docs, feeds, ops
from app.whole_pages import WholePages

API = "/api/v1/{language}"


class Texts(NamedTuple):
    """An operation's documentation in /openapi.json."""

    summary: str
    description: str
    returns: str  # the description of the success response


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
    errors: dict[int, str] = field(default_factory=dict)
    admin: bool = False  # needs the bearer token (app.mount checks it before the responder)
    response_headers: tuple[str, ...] = ()  # names in app.openapi.RESPONSE_HEADERS
    links: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Shared:
    """What the resources of one app are made from: built once by app.wsgi.create_app."""

    settings: Settings
    store: BundleStore
    cache: CachePolicy  # Cache-Control of every "public" route
    pages: WholePages  # whole-page compression of composed pages
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
    409: "Idempotency-Key reused for a different comment, or its comment was deleted.",
    429: "Rate limit exceeded.",
}
_COMMENT_404 = {404: "Article not found, or Comment not found."}
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


def _feed(kind: str, operation: Operation) -> Route:
    """`/api/v1/{language}/feed.<kind>`."""
    return Route(
        f"{API}/feed.{kind}",
        lambda s: feeds.Feed(s.store, kind),
        "feeds",
        (operation,),
        cache="public",
    )


def _openapi(shared: Shared) -> ops.OpenAPI:
    # Imported here: the document is written from this table, complete only once this
    # module is.
    from app.openapi import openapi_document

    return ops.OpenAPI(orjson.dumps(openapi_document()))


ROUTES: tuple[Route, ...] = (
    Route(
        f"{API}/articles",
        lambda s: articles.ArticleCollection(s.store, s.pages),
        "articles",
        (
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
            ),
        ),
        cache="public",
    ),
    Route(
        f"{API}/articles/latest",
        lambda s: articles.LatestArticles(s.store, s.pages),
        "articles",
        (
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
            ),
        ),
        cache="public",
    ),
    Route(
        f"{API}/articles/search",
        lambda s: articles.ArticleSearch(s.store, s.pages),
        "articles",
        (
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
            ),
        ),
        cache="public",
    ),
    Route(
        f"{API}/articles/{{article_id}}",
        lambda s: articles.ArticleItem(s.store),
        "articles",
        (
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
            ),
        ),
        cache="public",
    ),
    Route(
        f"{API}/categories",
        lambda s: articles.Categories(s.store),
        "articles",
        (
            Operation(
                "listCategories",
                Texts(
                    "Categories of a language",
                    "Every category that has at least one article, by Unicode code point.",
                    "Categories.",
                ),
                _CATEGORIES,
            ),
        ),
        cache="public",
    ),
    Route(
        f"{API}/corrections",
        lambda s: articles.CorrectionsLog(s.store, s.pages),
        "articles",
        (
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
            ),
        ),
        cache="public",
    ),
    Route(
        f"{API}/changes",
        lambda s: articles.Changes(s.store, s.pages),
        "articles",
        (
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
                errors={
                    410: "Cursor expired: not a cursor, of another lineage or language, or"
                    " before the oldest change kept. Start again without `since`."
                },
            ),
        ),
        cache="public",
    ),
    _feed(
        "atom",
        Operation(
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
            query=m.FeedQuery,
            media_type="application/atom+xml",
        ),
    ),
    _feed(
        "rss",
        Operation(
            "getRssFeed",
            Texts(
                "RSS feed of a language",
                "The same articles as the Atom feed, as RSS 2.0; `guid` is the entry id.",
                "An RSS 2.0 feed.",
            ),
            {"type": "string", "examples": [_RSS_EXAMPLE]},
            query=m.FeedQuery,
            media_type="application/rss+xml",
        ),
    ),
    _feed(
        "json",
        Operation(
            "getJsonFeed",
            Texts(
                "JSON Feed of a language",
                "The same articles as the Atom feed, as JSON Feed 1.1"
                " (https://www.jsonfeed.org/version/1.1/).",
                "A JSON Feed 1.1 document.",
            ),
            _JSON_FEED,
            query=m.FeedQuery,
            media_type="application/feed+json",
        ),
    ),
    Route(
        "/sitemap.xml",
        lambda s: feeds.SitemapIndex(s.store),
        "sitemaps",
        (
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
            ),
        ),
        cache="public",
    ),
    Route(
        "/sitemaps/{sitemap}.xml",
        lambda s: feeds.Sitemap(s.store, s.pages),
        "sitemaps",
        (
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
                errors=_NO_SITEMAP,
            ),
        ),
        cache="public",
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
                m.CommentList,
                query=m.CommentListQuery,
                response_headers=("Link",),
            ),
            Operation(
                "createComment",
                Texts(
                    "Comment on an article",
                    "A 201 means the comment is durably stored. Retrying with the same"
                    " `Idempotency-Key` returns the first comment and creates nothing. Rate"
                    " limited per client across all instances.",
                    "The comment, durably stored.",
                ),
                m.Comment,
                method="post",
                status=201,
                body=m.CommentCreate,
                headers=m.CommentCreateHeaders,
                errors=_CREATE_ERRORS,
                response_headers=("Location", "Idempotent-Replayed"),
                links=_created_links(),
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
                m.CommentCount,
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
                Texts("Get one comment", "One comment of the article.", "The comment."),
                m.Comment,
                errors=_COMMENT_404,
            ),
            Operation(
                "deleteComment",
                Texts(
                    "Delete a comment (administrator)",
                    "Needs `Authorization: Bearer` with the value of NEWS_ADMIN_TOKEN; deleted"
                    " comments disappear from list, count and get.",
                    "Deleted.",
                ),
                None,
                method="delete",
                status=204,
                errors={**_COMMENT_404, 401: "Missing or wrong admin token, or deletion disabled."},
                admin=True,
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
                m.CommentCounts,
                query=m.CommentCountsQuery,
            ),
            Operation(
                "countCommentsBatchPost",
                Texts(
                    "Count the comments of several articles (ids in the body)",
                    "Answers exactly as the GET form. A read: not rate limited, and no"
                    " Idempotency-Key.",
                    "Counts in request order, each id once; null for an id that is not an article.",
                ),
                m.CommentCounts,
                "post",
                body=m.CommentCountsRequest,
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
                errors={503: "Not ready: bundle files damaged, or the comment store is down."},
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
            ),
        ),
    ),
    Route("/docs", lambda s: docs.DocsPage(), "operations", (), cache=None, documented=False),
    Route(
        "/docs/{asset}",
        lambda s: docs.DocsAsset(),
        "operations",
        (),
        cache=None,
        documented=False,
    ),
)
