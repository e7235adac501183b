"""What spans languages: the sitemap index and the Google News sitemap (docs/delivery.md).

Both are rebuilt by every publish from the generations just built. The news sitemap's
window (48 hours up to the request) is cut by the server, so the bundle holds no clock: the
same sources always give the same bytes. The builder stores the articles published in the
48 hours up to the newest one (every window of a clock at or after it lies inside), at most
1,000 (newest first, then language order, then id), one `<url>` a line, and in the manifest
each entry's published_at and where its line ends (`site.news`): the server sends the lines
inside the window (app/resources/feeds.py). A publish ships no more than before.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping

import numpy as np
import orjson

from app.bundle import format as fmt
from app.bundle.manifest import Language, Site
from app.bundle.objects import ObjectEntry, ObjectStore
from app.bundle.segment import SegmentReader
from app.compression import CODEC_ID, precompress
from app.languages import LANGUAGES
from app.public_urls import PublicUrls
from app.syndication import (
    NEWS_ENTRY_END,
    NEWS_WINDOW_MICROS,
    news_sitemap,
    sitemap_index,
    sitemap_page_path,
)

NEWS_MAX = 1000


def sitemap_pages(articles: int, page_urls: int) -> int:
    """Pages of a language's sitemap: one even when it has no article."""
    return max(1, math.ceil(articles / page_urls))


def build_site(
    store: ObjectStore,
    languages: Mapping[str, Language],
    urls: PublicUrls,
    page_urls: int,
) -> tuple[Site, dict[str, ObjectEntry]]:
    paths = [
        sitemap_page_path(language, page)
        for language in LANGUAGES
        for page in range(1, sitemap_pages(languages[language].articles, page_urls) + 1)
    ]
    paths.append("/sitemaps/news.xml")
    # Candidates: each language's newest NEWS_MAX articles (list order is newest first).
    candidates: list[tuple[int, int, bytes, int, int]] = []  # (-published, lang, id, seg, doc)
    readers: dict[str, list[SegmentReader]] = {}
    for li, language in enumerate(LANGUAGES):
        meta = languages[language]
        readers[language] = [SegmentReader(store, d) for d in meta.segments]
        order = np.frombuffer(store.path(meta.files[fmt.ORDER]).read_bytes(), dtype="<u4")
        bases = np.cumsum([0] + [r.docs for r in readers[language]]).tolist()
        for gid in order[:NEWS_MAX].tolist():
            n = int(np.searchsorted(bases, gid, side="right")) - 1
            local = gid - bases[n]
            reader = readers[language][n]
            moment = int(reader.published()[local])
            article_id = reader.id_at(local)
            candidates.append((-moment, li, article_id, n, local))
    chosen = []
    published: list[int] = []
    candidates.sort()
    newest = -candidates[0][0] if candidates else 0
    for minus_published, li, _, n, local in candidates[:NEWS_MAX]:
        if newest + minus_published > NEWS_WINDOW_MICROS:
            break  # older than any window of a clock at or after the newest article
        language = LANGUAGES[li]
        chosen.append((language, orjson.loads(readers[language][n].record(local))))
        published.append(-minus_published)
    news = news_sitemap(urls, chosen)
    ends = [m.end() for m in re.finditer(re.escape(NEWS_ENTRY_END), news)]
    files: dict[str, str] = {}
    entries: dict[str, ObjectEntry] = {}
    for name, body in (
        (fmt.SITEMAP_INDEX, sitemap_index(urls, paths)),
        (fmt.NEWS_SITEMAP, news),
    ):
        variants = {"identity": body, **precompress(body)}  # served as stored (delivery.md)
        for encoding in fmt.DOCUMENT_ENCODINGS:
            obj, entry = store.put(variants[encoding])
            files[fmt.site_file(name, encoding)] = obj
            entries[obj] = entry
    site = Site(
        files=files,
        codec=CODEC_ID,
        sitemap_page_urls=page_urls,
        public_urls=urls.manifest(),
        # Newest first: each entry's published_at (µs) and the end of its line in news.xml.
        news_published=tuple(published),
        news_ends=tuple(ends),
    )
    return site, entries
