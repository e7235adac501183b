"""The route table: every path the service answers, and what each operation takes and gives.

app/wsgi.py mounts each route's resource on Falcon; app/openapi.py writes /openapi.json from
the same entries and the models they name, so the two cannot disagree.

Most error statuses follow from the route itself (app/openapi.py `_errors`): 400 wherever
the path has `{language}`, 404 for `{article_id}`, 422 where a query, header or body model
is validated, 413/415 with a body, 503 for comment operations. `errors` adds the others.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import falcon
from pydantic import BaseModel

from app import models as m

API = "/api/v1/{language}"


@dataclass(frozen=True)
class Operation:
    operation_id: str  # also the key of its texts in TEXTS
    response: type[BaseModel] | dict[str, Any] | None  # a model, a JSON Schema, or no body
    method: str = "get"  # every GET also answers HEAD
    status: int = 200
    query: type[BaseModel] | None = None
    body: type[BaseModel] | None = None
    headers: type[BaseModel] | None = None  # request headers, validated like the query
    media_type: str = "application/json"  # of the success response
    errors: dict[int, str] = field(default_factory=dict)
    admin: bool = False  # needs the bearer token
    response_headers: tuple[str, ...] = ()  # names in app.openapi.RESPONSE_HEADERS
    links: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Route:
    path: str
    resource: str  # key of the resource instance app/wsgi.py builds for this path
    tag: str
    operations: tuple[Operation, ...]
    # "public": ETag, If-None-Match -> 304, Cache-Control public; "no-store": never cached
    cache: str = "no-store"
    documented: bool = True  # /docs and its assets are pages, not API operations


# operation id -> (summary, description, description of the success response)
TEXTS: dict[str, tuple[str, str, str]] = {
    "listArticles": (
        "List articles, newest first",
        "Articles of one language by `published_at` descending, then `id`, optionally of one"
        " category. A page past the end is empty and keeps the true `total`.",
        "A page of articles.",
    ),
    "latestArticles": (
        "Latest articles",
        "The newest articles of one language in their short form.",
        "Newest articles first.",
    ),
    "searchArticles": (
        "Search articles by keyword",
        "Every term must match title, summary, content or tags; case, accents and word forms"
        " are ignored, CJK text matches as a character sequence and simplified and"
        " traditional Chinese find each other. Most relevant first.",
        "A page of matching articles.",
    ),
    "getArticle": (
        "Get one article",
        "The article with this id in this language. A retracted article answers 410 with"
        " its notice.",
        "The article.",
    ),
    "listCorrections": (
        "Corrections log of a language",
        "Every public correction and retraction of the language's articles: `at` descending,"
        " then `article_id`, then `kind` (`correction` before `retraction`). A retracted"
        " article's corrections stay beside its retraction; an article removed from the"
        " sources leaves the log.",
        "A page of the corrections log.",
    ),
    "listCategories": (
        "Categories of a language",
        "Every category that has at least one article, by Unicode code point.",
        "Categories.",
    ),
    "getAtomFeed": (
        "Atom feed of a language",
        "The newest 50 articles (of one category with `category`) as Atom 1.0 (RFC 4287)."
        " Entry ids are tag URIs of the language and article id: they never change. Links use"
        " the public article URL the bundle was built with. An unknown category gives a valid"
        " feed without entries.",
        "An Atom 1.0 feed.",
    ),
    "getRssFeed": (
        "RSS feed of a language",
        "The same articles as the Atom feed, as RSS 2.0; `guid` is the entry id.",
        "An RSS 2.0 feed.",
    ),
    "getJsonFeed": (
        "JSON Feed of a language",
        "The same articles as the Atom feed, as JSON Feed 1.1 (https://www.jsonfeed.org/version/1.1/).",
        "A JSON Feed 1.1 document.",
    ),
    "getSitemapIndex": (
        "Sitemap index",
        "Every page of every language's sitemap (50,000 URLs a page), then the news sitemap.",
        "A sitemaps.org sitemap index.",
    ),
    "getSitemap": (
        "A sitemap page, or the news sitemap",
        "`{language}.xml` and `{language}-{page}.xml`: every article's public URL with"
        " `lastmod` = `updated_at` and `xhtml:link` hreflang alternates for itself and its"
        " translations, newest first. `news.xml`: Google News sitemap of the articles published"
        " in the 48 hours before the newest article of the bundle, at most 1,000.",
        "A sitemaps.org urlset.",
    ),
    "listComments": (
        "List the comments of an article",
        "Newest first, or oldest first with `order=oldest`.",
        "A page of comments.",
    ),
    "createComment": (
        "Comment on an article",
        "A 201 means the comment is durably stored. Retrying with the same `Idempotency-Key`"
        " returns the first comment and creates nothing. Rate limited per client across all"
        " instances.",
        "The comment, durably stored.",
    ),
    "countComments": (
        "Count the comments of an article",
        "The total the comment list would report.",
        "The count.",
    ),
    "getComment": (
        "Get one comment",
        "One comment of the article.",
        "The comment.",
    ),
    "deleteComment": (
        "Delete a comment (administrator)",
        "Needs `Authorization: Bearer` with the value of NEWS_ADMIN_TOKEN; deleted comments"
        " disappear from list, count and get.",
        "Deleted.",
    ),
    "countCommentsBatch": (
        "Count the comments of several articles",
        "Repeat `article_id` 1 to 100 times. For many or long ids use the POST form: a request"
        " line holds at most 8190 bytes.",
        "Counts in request order, each id once; null for an id that is not an article.",
    ),
    "countCommentsBatchPost": (
        "Count the comments of several articles (ids in the body)",
        "Answers exactly as the GET form. A read: not rate limited, and no Idempotency-Key.",
        "Counts in request order, each id once; null for an id that is not an article.",
    ),
    "health": (
        "Liveness",
        "200 while the process runs.",
        "The process is running.",
    ),
    "ready": (
        "Readiness",
        "200 when the bundle is loaded whole (no file of it found damaged on disk) and the"
        " comment store answers.",
        "Ready to serve.",
    ),
    "metrics": (
        "Prometheus metrics",
        "Requests, latencies and bundle state, summed over the instance's workers"
        " (docs/operations.md). Never cached.",
        "Prometheus text exposition format.",
    ),
    "openapi": (
        "This document",
        "The OpenAPI 3.1 description of every operation.",
        "The OpenAPI document.",
    ),
}


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


def _feed(kind: str, operation_id: str, schema: dict[str, Any], media_type: str) -> Route:
    """`/api/v1/{language}/feed.<kind>`, served by the resource `feed_<kind>`."""
    operation = Operation(operation_id, schema, query=m.FeedQuery, media_type=media_type)
    return Route(f"{API}/feed.{kind}", f"feed_{kind}", "feeds", (operation,), cache="public")


ROUTES: tuple[Route, ...] = (
    Route(
        f"{API}/articles",
        "articles",
        "articles",
        (
            Operation(
                "listArticles",
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
        "latest",
        "articles",
        (
            Operation(
                "latestArticles",
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
        "search",
        "articles",
        (
            Operation(
                "searchArticles",
                m.SearchResults,
                query=m.SearchQuery,
                response_headers=("Link", "Last-Modified"),
            ),
        ),
        cache="public",
    ),
    Route(
        f"{API}/articles/{{article_id}}",
        "article",
        "articles",
        (
            Operation(
                "getArticle",
                m.Article,
                response_headers=("Last-Modified",),
                links=_article_links("$response.body#/id"),
            ),
        ),
        cache="public",
    ),
    Route(
        f"{API}/categories",
        "categories",
        "articles",
        (Operation("listCategories", _CATEGORIES),),
        cache="public",
    ),
    Route(
        f"{API}/corrections",
        "corrections",
        "articles",
        (
            Operation(
                "listCorrections",
                m.CorrectionList,
                query=m.PageQuery,
                response_headers=("Link",),
            ),
        ),
        cache="public",
    ),
    _feed(
        "atom",
        "getAtomFeed",
        {"type": "string", "examples": [_ATOM_EXAMPLE]},
        "application/atom+xml",
    ),
    _feed(
        "rss", "getRssFeed", {"type": "string", "examples": [_RSS_EXAMPLE]}, "application/rss+xml"
    ),
    _feed("json", "getJsonFeed", _JSON_FEED, "application/feed+json"),
    Route(
        "/sitemap.xml",
        "sitemap_index",
        "sitemaps",
        (Operation("getSitemapIndex", _XML, media_type="application/xml"),),
        cache="public",
    ),
    Route(
        "/sitemaps/{sitemap}.xml",
        "sitemap",
        "sitemaps",
        (Operation("getSitemap", _XML, media_type="application/xml", errors=_NO_SITEMAP),),
        cache="public",
    ),
    Route(
        f"{API}/articles/{{article_id}}/comments",
        "comments",
        "comments",
        (
            Operation(
                "listComments",
                m.CommentList,
                query=m.CommentListQuery,
                response_headers=("Link",),
            ),
            Operation(
                "createComment",
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
        "comment_count",
        "comments",
        (Operation("countComments", m.CommentCount),),
    ),
    Route(
        f"{API}/articles/{{article_id}}/comments/{{comment_id}}",
        "comment",
        "comments",
        (
            Operation("getComment", m.Comment, errors=_COMMENT_404),
            Operation(
                "deleteComment",
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
        "comment_counts",
        "comments",
        (
            Operation("countCommentsBatch", m.CommentCounts, query=m.CommentCountsQuery),
            Operation(
                "countCommentsBatchPost", m.CommentCounts, "post", body=m.CommentCountsRequest
            ),
        ),
    ),
    Route("/health", "health", "operations", (Operation("health", m.Health),)),
    Route(
        "/ready",
        "ready",
        "operations",
        (
            Operation(
                "ready",
                m.Ready,
                errors={503: "Not ready: bundle files damaged, or the comment store is down."},
            ),
        ),
    ),
    Route(
        "/openapi.json",
        "openapi",
        "operations",
        (Operation("openapi", m.OpenAPIDocument),),
        cache="",
    ),
    Route(
        "/metrics",
        "metrics",
        "operations",
        (Operation("metrics", {"type": "string"}, media_type="text/plain"),),
    ),
    Route("/docs", "docs", "operations", (), documented=False),
    Route("/docs/{asset}", "docs_asset", "operations", (), documented=False),
)


def mount(app: falcon.App, resources: dict[str, object], *, partial: bool = False) -> None:
    """Add every route whose resource is in `resources` (all of them unless `partial`)."""
    missing = {route.resource for route in ROUTES} - set(resources)
    unknown = set(resources) - {route.resource for route in ROUTES}
    if unknown or (missing and not partial):
        raise RuntimeError(f"route table mismatch: missing {missing}, unknown {unknown}")
    for route in ROUTES:
        if route.resource in resources:
            # A literal segment beats a field in Falcon's router: "count" is never an id.
            app.add_route(route.path, resources[route.resource])
