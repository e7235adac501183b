"""The article and category operations (docs/api.md §2).

Every responder follows the documented order of checks: language, then parameters,
then existence. Each describes its body (app.delivery: envelope and runs of pre-serialised
records, or a precomputed document) and app.delivery.send writes it in the negotiated
encoding with its ETag, caching headers and surrogate keys.
"""

from __future__ import annotations

import hashlib

import falcon

from app import params
from app import surrogate_keys as keys
from app.bundle.reader import LanguageData
from app.bundle.store import BundleStore
from app.delivery import Composed, Precomputed, send
from app.errors import article_not_found, unsupported_language
from app.http_cache import CachePolicy
from app.languages import LANGUAGE_SET
from app.models import ArticleListQuery, LatestQuery, SearchQuery

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

    def __init__(self, store: BundleStore, cache: CachePolicy) -> None:
        self.store = store
        self.cache = cache


class ArticleCollection(_BundleResource):
    """GET /api/v1/{language}/articles?page&page_size&category"""

    def on_get(self, req: falcon.Request, resp: falcon.Response, language: str) -> None:
        data = _language(self.store, language)
        page = params.parse(req, ArticleListQuery)
        category = page.category or None  # empty means no filter
        start, stop = page.offset, page.offset + page.page_size
        if category is None:
            total = data.count
            runs = data.runs(start, min(stop, total))
            depends = keys.collection(language)
        else:
            positions = data.category_positions(category)
            total = len(positions)
            runs = data.runs_at(positions[start:stop]) if start < total else []
            depends = keys.category_page(language, category)
        body = Composed("articles", params.LIST_HEAD, runs, params.list_tail(page, total))
        etag = _collection_etag(data, "list", params.page_key(page), page.page_size, category)
        send(req, resp, body, etag, self.cache, depends, data.codec)

    on_head = on_get


class LatestArticles(_BundleResource):
    """GET /api/v1/{language}/articles/latest?limit"""

    def on_get(self, req: falcon.Request, resp: falcon.Response, language: str) -> None:
        data = _language(self.store, language)
        limit = params.parse(req, LatestQuery).limit
        body = Composed("summaries", b"[", data.runs(0, min(limit, data.count)), b"]")
        etag = _collection_etag(data, "latest", limit)
        send(req, resp, body, etag, self.cache, keys.collection(language), data.codec)

    on_head = on_get


class ArticleSearch(_BundleResource):
    """GET /api/v1/{language}/articles/search?q&page&page_size"""

    def on_get(self, req: falcon.Request, resp: falcon.Response, language: str) -> None:
        data = _language(self.store, language)
        page = params.parse(req, SearchQuery)
        q = page.q
        total, positions = data.search(q, page.offset, page.page_size)
        body = Composed(
            "articles", params.LIST_HEAD, data.runs_at(positions), params.list_tail(page, total)
        )
        etag = _collection_etag(data, "search", q, params.page_key(page), page.page_size)
        send(req, resp, body, etag, self.cache, keys.collection(language), data.codec)

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
        run = data.run_by_gid(gid)
        body = Composed("articles", b"", [run], b"", br=run.encoded("articles", "br"))
        send(req, resp, body, etag, self.cache, keys.article(language, article_id), data.codec)

    on_head = on_get


class Categories(_BundleResource):
    """GET /api/v1/{language}/categories"""

    def on_get(self, req: falcon.Request, resp: falcon.Response, language: str) -> None:
        data = _language(self.store, language)
        etag = _collection_etag(data, "categories")
        body = Precomputed(data.categories_encoded)
        send(req, resp, body, etag, self.cache, keys.collection(language), data.codec)

    on_head = on_get
