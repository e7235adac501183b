"""The article and category operations (docs/api.md §2).

Every responder follows the documented order of checks: language, then parameters,
then existence. Bodies are assembled from pre-serialised slices of the bundle.
"""

from __future__ import annotations

import hashlib

import falcon

from app import params
from app.bundle.reader import LanguageData, ListPage, SearchPage
from app.bundle.store import BundleStore
from app.errors import article_not_found, unsupported_language
from app.http_cache import send_cacheable
from app.languages import LANGUAGE_SET
from app.links import link_header
from app.models import ArticleListQuery, LatestQuery, ListOrder, SearchQuery

# Part of every collection ETag: bump it when the envelope the server writes changes.
_ENVELOPE_VERSION = "1"


def _language(store: BundleStore, language: str) -> LanguageData:
    if language not in LANGUAGE_SET:
        raise unsupported_language(language)
    return store.current().languages[language]


def _collection_etag(data: LanguageData, *key: object) -> str:
    """Depends on the language's bundle content and the canonical request parameters."""
    digest = hashlib.blake2b(repr(key).encode(), digest_size=8).hexdigest()
    return f'"{data.content_hash}-{_ENVELOPE_VERSION}{digest}"'


class _BundleResource:
    """Article and category resources read the current bundle and send cacheable bytes."""

    def __init__(self, store: BundleStore, max_age: int) -> None:
        self.store = store
        self.max_age = max_age


class ArticleCollection(_BundleResource):
    """GET /api/v1/{language}/articles?page&page_size&category&from&to&order&fields"""

    def on_get(self, req: falcon.Request, resp: falcon.Response, language: str) -> None:
        data = _language(self.store, language)
        page = params.parse(req, ArticleListQuery)
        category = page.category or None  # empty means no filter
        first, last = page.date_range
        selection = ListPage(first, last, page.order is ListOrder.oldest, page.summary)
        start = page.offset
        total, items = data.list_page(selection, category, start, start + page.page_size)
        body = params.list_body(page, items, total)
        key: tuple[object, ...] = ("list", params.page_key(page), page.page_size, category)
        if selection != _LIST_DEFAULT:  # requests without the §7 parameters keep their ETag
            key += (first, last, page.order.value, page.fields.value)
        resp.set_header("Link", link_header(req, page.page, page.page_size, total))
        send_cacheable(req, resp, _collection_etag(data, *key), self.max_age, body)

    on_head = on_get


_LIST_DEFAULT = ListPage()


class LatestArticles(_BundleResource):
    """GET /api/v1/{language}/articles/latest?limit"""

    def on_get(self, req: falcon.Request, resp: falcon.Response, language: str) -> None:
        data = _language(self.store, language)
        limit = params.parse(req, LatestQuery).limit
        body = b"[%b]" % data.summaries_run(0, min(limit, data.count))
        send_cacheable(req, resp, _collection_etag(data, "latest", limit), self.max_age, body)

    on_head = on_get


class ArticleSearch(_BundleResource):
    """GET /api/v1/{language}/articles/search?q&page&page_size&category&from&to&order&fields"""

    def on_get(self, req: falcon.Request, resp: falcon.Response, language: str) -> None:
        data = _language(self.store, language)
        page = params.parse(req, SearchQuery)
        q = page.q
        category = page.category or None
        first, last = page.date_range
        selection = SearchPage(first, last, page.order.value, page.summary)
        start = page.offset
        total, items, facets = data.search_page(
            q, selection, category, start, start + page.page_size
        )
        body = params.list_body(page, items, total, b',"facets":' + facets)
        # Every search body carries facets since version 1.1 (docs/api.md §7): "facets" in
        # the key gives those bodies new ETags.
        key = ("search", q, params.page_key(page), page.page_size, "facets", selection, category)
        resp.set_header("Link", link_header(req, page.page, page.page_size, total))
        send_cacheable(req, resp, _collection_etag(data, *key), self.max_age, body)

    on_head = on_get


class ArticleItem(_BundleResource):
    """GET /api/v1/{language}/articles/{article_id}"""

    def on_get(
        self, req: falcon.Request, resp: falcon.Response, language: str, article_id: str
    ) -> None:
        data = _language(self.store, language)
        gid = data.find(article_id)
        if gid is None:
            raise article_not_found()
        etag = f'"{data.etag_by_gid(gid)}"'
        send_cacheable(req, resp, etag, self.max_age, data.article_by_gid(gid).tobytes())

    on_head = on_get


class Categories(_BundleResource):
    """GET /api/v1/{language}/categories"""

    def on_get(self, req: falcon.Request, resp: falcon.Response, language: str) -> None:
        data = _language(self.store, language)
        etag = _collection_etag(data, "categories")
        send_cacheable(req, resp, etag, self.max_age, data.categories_json)

    on_head = on_get
