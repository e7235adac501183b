"""Feeds and sitemaps (docs/delivery.md): compiled by the builder, sent as stored.

Feeds, the sitemap index and the news sitemap are whole documents that the builder rendered
and compressed in every coding: `app.delivery.send` negotiates and sends one of them, given
as a `Precomputed` body. A language's sitemap page is composed, like a list page, from
per-article `<url>` records whose gzip and zstd pieces were also compressed at build time
(a `Composed` body): a publish renders no page. Both paths set the per-coding ETag, Vary,
Cache-Control and Surrogate-Key.
"""

from __future__ import annotations

import hashlib
import re
import time
from collections.abc import Mapping

import falcon

from app import params
from app import surrogate_keys as keys
from app.bounded import Bounded
from app.bundle.site import SiteData
from app.bundle.store import BundleStore
from app.compression import IDENTITY, precompress
from app.delivery import Answer, Body, Composed, Precomputed, Whole, send
from app.errors import APIError
from app.languages import LANGUAGE_SET
from app.models import FeedQuery
from app.public_urls import PublicUrls
from app.resources.articles import BundleResource
from app.syndication import (
    MEDIA_TYPES,
    NEWS_TAIL,
    NEWS_WINDOW_MICROS,
    SITEMAP_HEAD,
    SITEMAP_TAIL,
    render_feed,
)

XML = "application/xml"
clock = time.time  # the news sitemap's "now" (tests set it)
_PAGE_NAME = re.compile(r"([a-z_]+)(?:-([1-9][0-9]{0,8}))?")


def _etag(*parts: object) -> str:
    return '"' + hashlib.blake2b(repr(parts).encode(), digest_size=16).hexdigest() + '"'


class Feed(BundleResource):
    """GET /api/v1/{language}/feed.{atom,rss,json}?category"""

    def __init__(self, store: BundleStore, kind: str) -> None:
        super().__init__(store)
        self.kind = kind

    def on_get(self, req: falcon.Request, resp: falcon.Response, language: str) -> None:
        category = params.parse(req, FeedQuery).category or None  # empty means every category
        bundle = self.store.current()
        data = bundle.languages[language]
        compiled = data.feed(self.kind, category)
        variants: Mapping[str, bytes | memoryview]
        if compiled is not None:
            variants, etag = compiled
            depends = (
                keys.collection(language)
                if category is None
                else keys.category_feed(language, category, known=True)
            )
        else:
            # A category with no article: a valid feed without entries, as the list gives an
            # empty page. The only document rendered and compressed per request: a few
            # hundred bytes, for a category name the builder cannot know.
            assert category is not None  # the feed of every category is always compiled
            urls = PublicUrls.from_manifest(bundle.site.public_urls)
            body = render_feed(self.kind, urls, language, category, [], data.feeds_updated)
            variants = {IDENTITY: body, **precompress(body)}
            etag = _etag("feed", self.kind, data.content_hash, category)
            depends = keys.category_feed(language, category, known=False)
        media_type = MEDIA_TYPES[self.kind]
        answer = Answer(Precomputed(variants), etag, self.cache.header, depends, data.codec)
        send(req, resp, answer._replace(media_type=media_type))


def _send_site(
    req: falcon.Request,
    resp: falcon.Response,
    cache_control: str,
    body: Body,
    etag: str,
    codec: str,
) -> None:
    """A document that spans languages (the sitemap index, the news sitemap): XML, keyed
    `site`."""
    send(req, resp, Answer(body, etag, cache_control, keys.SITE_KEY, codec, media_type=XML))


class SitemapIndex(BundleResource):
    """GET /sitemap.xml"""

    def on_get(self, req: falcon.Request, resp: falcon.Response) -> None:
        site = self.store.current().site
        variants, etag = site.sitemap_index
        _send_site(req, resp, self.cache.header, Precomputed(variants), etag, site.codec)


# The news sitemap's window, compressed whole, by ETag: its cut moves only when an entry ages
# out, so a few are enough (the response cache keeps none: the answer follows the clock).
NEWS_KEPT_BYTES = 8 << 20
NEWS_KEPT_ENTRIES = 16


class Sitemap(BundleResource):
    """GET /sitemaps/news.xml, /sitemaps/{language}.xml and /sitemaps/{language}-{page}.xml

    A language's page joins the `<url>` records of its list positions, one slice per run of
    consecutive records of a segment, in the negotiated coding (docs/delivery.md).
    """

    def __init__(self, store: BundleStore) -> None:
        super().__init__(store)
        self.news_kept: Bounded[str, bytes] = Bounded(NEWS_KEPT_BYTES, NEWS_KEPT_ENTRIES, 4)

    def on_get(self, req: falcon.Request, resp: falcon.Response, sitemap: str) -> None:
        bundle = self.store.current()
        site = bundle.site
        if sitemap == "news":
            self._news(req, resp, site)
            return
        match = _PAGE_NAME.fullmatch(sitemap)
        if match is None or match[1] not in LANGUAGE_SET or match[2] == "1":
            raise APIError(404, "Not Found")  # page 1 is /sitemaps/{language}.xml
        language, page = match[1], int(match[2] or 1)
        data = bundle.languages[language]
        per_page = site.sitemap_page_urls
        start = (page - 1) * per_page
        if page > 1 and start >= data.count:
            raise APIError(404, "Not Found")  # a language with no article still has page 1
        runs = data.coalesced_runs(start, min(start + per_page, data.count))
        body = Composed("sitemap", SITEMAP_HEAD, runs, SITEMAP_TAIL)
        etag = _etag("sitemap", data.content_hash, per_page, page)
        depends = keys.collection(language)
        self.send_page(req, resp, data, body, etag, depends, None, XML)

    def _news(self, req: falcon.Request, resp: falcon.Response, site: SiteData) -> None:
        """The stored entries published in the 48 hours up to now (docs/delivery.md): all of
        them as stored, or the prefix of their lines inside the window, compressed whole
        (and kept: the cut moves only when an entry ages out)."""
        variants, etag = site.news_sitemap
        count = site.news_window(int(clock() * 1_000_000) - NEWS_WINDOW_MICROS)
        if count == len(site.news_ends):
            _send_site(req, resp, self.cache.header, Precomputed(variants), etag, site.codec)
            return
        cut = site.news_ends[count - 1] if count else site.news_head
        body = Whole(bytes(variants[IDENTITY][:cut]) + NEWS_TAIL, self.news_kept)
        _send_site(req, resp, self.cache.header, body, _etag("news", etag, count), site.codec)
