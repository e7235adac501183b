"""What a bundle serves across languages (the manifest's `site` entry): the sitemap index
and the news sitemap, precompressed, and what the sitemaps were built with."""

from __future__ import annotations

import itertools
from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

from app.bundle import format as fmt
from app.bundle.manifest import Site
from app.compression import IDENTITY
from app.syndication import NEWS_TAIL


@dataclass(frozen=True)
class SiteData:
    """What spans languages: the sitemap index and the news sitemap, each in every coding
    with its quoted identity ETag, the codec that compressed them, and the sitemap page size
    and public URLs the bundle was built with."""

    sitemap_index: tuple[dict[str, memoryview], str]
    news_sitemap: tuple[dict[str, memoryview], str]
    codec: str
    sitemap_page_urls: int
    public_urls: dict[str, str]
    # The news sitemap's entries, newest first: published_at (µs, descending) and the end of
    # each entry's line in its identity body (app/builder/site.py).
    news_published: np.ndarray
    news_ends: list[int]
    news_head: int  # where the first entry starts (the XML declaration and <urlset> before)

    def news_window(self, since_micros: int) -> int:
        """How many news entries were published at or after `since_micros`."""
        descending = self.news_published
        return int(np.searchsorted(-descending, -since_micros, side="right"))

    @classmethod
    def from_manifest(cls, site: Site, views: Mapping[str, memoryview]) -> SiteData:
        files = site.files
        page = site.sitemap_page_urls
        if page < 1:
            raise ValueError("sitemap_page_urls must be at least 1")

        def document(name: str) -> tuple[dict[str, memoryview], str]:
            variants = {e: views[files[fmt.site_file(name, e)]] for e in fmt.DOCUMENT_ENCODINGS}
            return variants, _quoted(variants[IDENTITY])

        news = document(fmt.NEWS_SITEMAP)
        published = np.asarray(site.news_published, dtype=np.int64)
        ends = list(site.news_ends)
        size = len(news[0][IDENTITY])
        head = bytes(news[0][IDENTITY]).find(b"<url>") if ends else size - len(NEWS_TAIL)
        if (
            len(ends) != published.size
            or any(b <= a for a, b in itertools.pairwise(ends))
            or (ends and not 0 < head < ends[0] <= ends[-1] <= size)
            or np.any(np.diff(published) > 0)
        ):
            raise ValueError("news: entries do not match news.xml")
        return cls(
            document(fmt.SITEMAP_INDEX),
            news,
            site.codec,
            page,
            dict(site.public_urls),
            published,
            ends,
            head,
        )


def _quoted(body: bytes | memoryview) -> str:
    return f'"{fmt.content_digest(body).hex()}"'
