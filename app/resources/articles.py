"""The article and category operations (docs/api.md §2).

Every responder follows the documented order of checks: language (app.mount, from the
route's `{language}`), then parameters, then existence. Each describes its body
(app.delivery: envelope and runs of pre-serialised records, or a precomputed document) and
app.delivery.send writes it in the negotiated encoding with its ETag, caching headers and
surrogate keys.
"""

from __future__ import annotations

import hashlib

import falcon

from app import params, versions
from app import surrogate_keys as keys
from app.bundle import changes
from app.bundle.format import LOG_KIND
from app.bundle.language import LanguageData, ListPage, SearchPage
from app.bundle.segment import last_modified
from app.bundle.store import BundleStore
from app.delivery import Answer, Composed, Precomputed, Whole, send
from app.errors import APIError, article_not_found
from app.http_cache import CachePolicy
from app.links import set_link
from app.models import (
    LIMIT_MAX,
    ArticleListQuery,
    ChangesQuery,
    LatestQuery,
    ListOrder,
    PageQuery,
    SearchQuery,
)


def _digest(key: tuple[object, ...]) -> str:
    return hashlib.blake2b(repr(key).encode(), digest_size=8).hexdigest()


def _collection_etag(data: LanguageData, *key: object) -> str:
    """Depends on the language's bundle content and the canonical request parameters."""
    return f'"{data.content_hash}-{versions.COLLECTION_ENVELOPE_VERSION}{_digest(key)}"'


# The keys of latest (one per limit) and categories are known before any request: their
# digests are worked out once.
_LATEST_DIGESTS = {limit: _digest(("latest", limit)) for limit in range(1, LIMIT_MAX + 1)}
_CATEGORIES_DIGEST = _digest(("categories",))


class BundleResource:
    """Resources that read the current bundle and send cacheable bytes (articles,
    categories, feeds, sitemaps): the resources of the routes declared "public"
    (app/routes.py), given the app's CachePolicy by app.mount."""

    cache: CachePolicy  # set by app.mount from the route's declaration

    def __init__(self, store: BundleStore) -> None:
        self.store = store

    def send_page(
        self,
        req: falcon.Request,
        resp: falcon.Response,
        data: LanguageData,
        body: Composed,
        etag: str,
        depends: str,
        modified: str | None,
        media_type: str | None = None,
    ) -> None:
        """Send a page composed of records of `data`: compressed whole in every coding but
        identity (app.delivery). `modified` is its Last-Modified: a page of articles carries
        its newest record's update time; None sends none."""
        cache_control, codec = self.cache.header, data.codec
        send(
            req,
            resp,
            Answer(body, etag, cache_control, depends, codec, modified, media_type, page=True),
        )


class ArticleCollection(BundleResource):
    """GET /api/v1/{language}/articles?page&page_size&category&from&to&order&fields"""

    def on_get(self, req: falcon.Request, resp: falcon.Response, language: str) -> None:
        data = self.store.current().languages[language]
        page = params.parse(req, ArticleListQuery)
        category = page.category or None  # empty means no filter
        first, last = page.date_range
        selection = ListPage(first, last, page.order is ListOrder.oldest, page.summary)
        start = page.offset
        total, runs = data.list_page(selection, category, start, start + page.page_size)
        kind = "summaries" if page.summary else "articles"
        body = Composed(kind, params.LIST_HEAD, runs, params.list_tail(page, total))
        key: tuple[object, ...] = ("list", params.page_key(page), page.page_size, category)
        if selection != _LIST_DEFAULT:  # requests without the §7 parameters keep their ETag
            key += (first, last, page.order.value, page.fields.value)
        set_link(req, resp, ArticleListQuery, page.page, page.page_size, total)
        depends = (
            keys.collection(language)
            if category is None
            else keys.category_page(language, category)
        )
        etag = _collection_etag(data, *key)
        self.send_page(req, resp, data, body, etag, depends, last_modified(runs))


_LIST_DEFAULT = ListPage()


class LatestArticles(BundleResource):
    """GET /api/v1/{language}/articles/latest?limit"""

    def on_get(self, req: falcon.Request, resp: falcon.Response, language: str) -> None:
        data = self.store.current().languages[language]
        limit = params.parse(req, LatestQuery).limit
        runs = data.runs(0, min(limit, data.count))
        body = Composed("summaries", b"[", runs, b"]")
        envelope = versions.COLLECTION_ENVELOPE_VERSION
        etag = f'"{data.content_hash}-{envelope}{_LATEST_DIGESTS[limit]}"'
        depends = keys.collection(language)
        # The newest records' Last-Modified is fixed per bundle: worked out at load.
        modified = data.head_modified(limit)
        self.send_page(req, resp, data, body, etag, depends, modified)


class ArticleSearch(BundleResource):
    """GET /api/v1/{language}/articles/search?q&page&page_size&category&from&to&order&fields
    &highlight"""

    def on_get(self, req: falcon.Request, resp: falcon.Response, language: str) -> None:
        data = self.store.current().languages[language]
        page = params.parse(req, SearchQuery)
        q = page.q
        category = page.category or None
        first, last = page.date_range
        selection = SearchPage(first, last, page.order.value, page.summary)
        start = page.offset
        total, runs, facets, highlights = data.search_page(
            q, selection, category, start, start + page.page_size, page.highlight
        )
        kind = "summaries" if page.summary else "articles"
        extra = b',"facets":' + facets
        if highlights is not None:
            extra += b',"highlights":' + highlights
        body = Composed(kind, params.LIST_HEAD, runs, params.list_tail(page, total, extra))
        # Every search body carries facets since version 1.1 (docs/api.md §7): "facets" in
        # the key gives those bodies new ETags.
        key: tuple[object, ...] = (
            "search",
            q,
            params.page_key(page),
            page.page_size,
            "facets",
            selection,
            category,
        )
        if page.highlight:  # requests without it keep their ETag
            key += ("highlight",)
        set_link(req, resp, SearchQuery, page.page, page.page_size, total)
        etag = _collection_etag(data, *key)
        depends = keys.collection(language)
        self.send_page(req, resp, data, body, etag, depends, last_modified(runs))


class ArticleItem(BundleResource):
    """GET /api/v1/{language}/articles/{article_id}"""

    def on_get(
        self, req: falcon.Request, resp: falcon.Response, language: str, article_id: str
    ) -> None:
        data = self.store.current().languages[language]
        gid = data.find(article_id)
        if gid is None:
            notice = data.retracted.get(article_id)
            if notice is None:
                raise article_not_found()
            # 410 with its notice, cached and compressed like the article it replaces.
            variants, etag = notice
            depends = keys.article(language, article_id)
            gone = Answer(Precomputed(variants), etag, self.cache.header, depends, data.codec)
            send(req, resp, gone._replace(status=410))
            return
        run, etag, modified, depends = data.article(gid)
        body = Composed("articles", b"", (run,), b"", run)  # its brotli piece is a whole body
        send(req, resp, Answer(body, etag, self.cache.header, depends, data.codec, modified))


class CorrectionsLog(BundleResource):
    """GET /api/v1/{language}/corrections?page&page_size"""

    def on_get(self, req: falcon.Request, resp: falcon.Response, language: str) -> None:
        data = self.store.current().languages[language]
        page = params.parse(req, PageQuery)
        log = data.corrections
        start = page.offset
        runs = log.page(start, start + page.page_size)
        body = Composed(LOG_KIND, params.LIST_HEAD, runs, params.list_tail(page, log.count))
        set_link(req, resp, PageQuery, page.page, page.page_size, log.count)
        etag = _collection_etag(data, "corrections", params.page_key(page), page.page_size)
        self.send_page(req, resp, data, body, etag, keys.collection(language), None)


class Categories(BundleResource):
    """GET /api/v1/{language}/categories"""

    def on_get(self, req: falcon.Request, resp: falcon.Response, language: str) -> None:
        data = self.store.current().languages[language]
        etag = f'"{data.content_hash}-{versions.COLLECTION_ENVELOPE_VERSION}{_CATEGORIES_DIGEST}"'
        body = Precomputed(data.categories_encoded)
        depends = keys.collection(language)
        send(req, resp, Answer(body, etag, self.cache.header, depends, data.codec))


class Changes(BundleResource):
    """GET /api/v1/{language}/changes?since&limit (docs/api.md §13)"""

    def on_get(self, req: falcon.Request, resp: falcon.Response, language: str) -> None:
        data = self.store.current().languages[language]
        query = params.parse(req, ChangesQuery)
        log = data.changes
        try:
            cursor = log.start() if query.since is None else changes.Cursor.decode(query.since)
            page = log.page(cursor, query.limit)
        except changes.CursorExpired:
            raise cursor_expired() from None
        etag = _collection_etag(data, "changes", data.changes_key, query.since, query.limit)
        depends = keys.collection(language)
        send(req, resp, Answer(Whole(page.body()), etag, self.cache.header, depends, data.codec))


def cursor_expired() -> APIError:
    """410: not a cursor, another lineage or language, or before the oldest change kept. Not
    cacheable: the client starts again without `since`."""
    return APIError(410, "Cursor expired", headers={"Cache-Control": "no-store"})
