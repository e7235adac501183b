"""Feeds and sitemaps (docs/delivery.md): compiled by the builder, sent as stored.

Each resource produces its identity body in one place (`body`), then sends it through
app.http_cache.send_cacheable like every other bundle response.
"""

from __future__ import annotations

import hashlib
import re
import threading
from collections import OrderedDict

import falcon

from app import params
from app.bundle.reader import Bundle, LanguageData
from app.bundle.store import BundleStore
from app.errors import APIError, unsupported_language
from app.http_cache import send_cacheable
from app.languages import LANGUAGE_SET
from app.models import FeedQuery
from app.public_urls import PublicUrls
from app.syndication import MEDIA_TYPES, SITEMAP_HEAD, SITEMAP_TAIL, render_feed

XML = "application/xml"
_PAGE_NAME = re.compile(r"([a-z_]+)(?:-([1-9][0-9]{0,8}))?")


def _etag(*parts: object) -> str:
    return '"' + hashlib.blake2b(repr(parts).encode(), digest_size=16).hexdigest() + '"'


def _send(
    req: falcon.Request,
    resp: falcon.Response,
    etag: str,
    max_age: int,
    body: bytes,
    media_type: str,
) -> None:
    send_cacheable(req, resp, etag, max_age, body)
    if resp.status != falcon.HTTP_304:  # a 304 carries no content, so no Content-Type
        resp.content_type = media_type


class Feed:
    """GET /api/v1/{language}/feed.{atom,rss,json}?category"""

    def __init__(self, store: BundleStore, max_age: int, kind: str) -> None:
        self.store = store
        self.max_age = max_age
        self.kind = kind

    def body(self, language: str, category: str | None) -> tuple[bytes, str]:
        """(identity body, quoted ETag) of this feed."""
        bundle = self.store.current()
        data: LanguageData = bundle.languages[language]
        compiled = data.feed(self.kind, category)
        if compiled is not None:
            body, etag = compiled
            return body.tobytes(), f'"{etag}"'
        # A category with no article: a valid feed without entries, as an empty list page.
        urls = PublicUrls.from_manifest(bundle.site.public_urls)
        body = render_feed(self.kind, urls, language, category, [], data.feeds_updated)
        return body, _etag("feed", self.kind, data.content_hash, category)

    def on_get(self, req: falcon.Request, resp: falcon.Response, language: str) -> None:
        if language not in LANGUAGE_SET:
            raise unsupported_language(language)
        category = params.parse(req, FeedQuery).category or None
        body, etag = self.body(language, category)
        _send(req, resp, etag, self.max_age, body, MEDIA_TYPES[self.kind])

    on_head = on_get


class SitemapIndex:
    """GET /sitemap.xml"""

    def __init__(self, store: BundleStore, max_age: int) -> None:
        self.store = store
        self.max_age = max_age

    def on_get(self, req: falcon.Request, resp: falcon.Response) -> None:
        site = self.store.current().site
        _send(req, resp, site.sitemap_index_etag, self.max_age, site.sitemap_index, XML)

    on_head = on_get


class Sitemap:
    """GET /sitemaps/news.xml, /sitemaps/{language}.xml and /sitemaps/{language}-{page}.xml

    A language's pages are assembled from the per-article <url> fragments its segments hold,
    on request, and kept in a small per-worker cache: a publish renders no sitemap page.
    """

    CACHE_PAGES = 2  # a 50,000-URL page is about 12 MB

    def __init__(self, store: BundleStore, max_age: int) -> None:
        self.store = store
        self.max_age = max_age
        self._cache: OrderedDict[tuple[str, str, int], tuple[bytes, str]] = OrderedDict()
        self._lock = threading.Lock()  # worker threads share the cache

    def body(self, bundle: Bundle, name: str) -> tuple[bytes, str] | None:
        """(identity body, quoted ETag) of the sitemap called `name`, or None."""
        if name == "news":
            return bundle.site.news_sitemap, bundle.site.news_sitemap_etag
        match = _PAGE_NAME.fullmatch(name)
        if match is None or match[1] not in LANGUAGE_SET:
            return None
        language, page = match[1], int(match[2] or 1)
        if match[2] == "1":
            return None  # page 1 is /sitemaps/{language}.xml
        data = bundle.languages[language]
        per_page = bundle.site.sitemap_page_urls
        if page > 1 and (page - 1) * per_page >= data.count:
            return None
        key = (data.content_hash, language, page)
        with self._lock:
            cached = self._cache.get(key)
            if cached is not None:
                self._cache.move_to_end(key)
                return cached
        start = (page - 1) * per_page
        urls = data.sitemap_urls(start, min(start + per_page, data.count))
        body = b"".join((SITEMAP_HEAD, urls, SITEMAP_TAIL))
        cached = body, _etag("sitemap", data.content_hash, per_page, page)
        with self._lock:
            self._cache[key] = cached
            while len(self._cache) > self.CACHE_PAGES:
                self._cache.popitem(last=False)
        return cached

    def on_get(self, req: falcon.Request, resp: falcon.Response, sitemap: str) -> None:
        found = self.body(self.store.current(), sitemap)
        if found is None:
            raise APIError(404, "Not Found")
        _send(req, resp, found[1], self.max_age, found[0], XML)

    on_head = on_get
