"""Feeds (Atom 1.0, RSS 2.0, JSON Feed 1.1) and sitemaps, rendered from Article JSON.

The builder renders every document (app/builder/generation.py, app/builder/site.py) and
per-article sitemap fragments (app/builder/compile.py); the server renders only the empty feed
of an unknown category, with these same functions. Whatever the source text holds, the XML is
well formed: characters XML 1.0 forbids (most C0 controls, U+FFFE, U+FFFF, lone surrogates)
are dropped and markup characters escaped (docs/delivery.md).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from datetime import datetime
from email.utils import format_datetime
from typing import Any, NamedTuple
from urllib.parse import quote, urlsplit

import orjson

from app.languages import LANGUAGES
from app.public_urls import PublicUrls, bcp47
from app.timestamps import parse_timestamp

FEED_ENTRIES = 50
# A change to what a renderer writes needs a new app.versions.FEED_RENDER_VERSION.
# The IPTC Digital Source Type vocabulary: the scheme (Atom) or domain (RSS) of the category
# that discloses how an entry was made.
SOURCE_TYPE_SCHEME = "http://cv.iptc.org/newscodes/digitalsourcetype/"
# Entry and feed ids: a tag URI (RFC 4151) of the language and the article id, so an entry
# keeps its id whatever the public URLs become.
TAG_PREFIX = "tag:news-article-api,2026:"
EPOCH = "1970-01-01T00:00:00Z"
FEED_FORMATS = ("atom", "rss", "json")
MEDIA_TYPES = {
    "atom": "application/atom+xml",
    "rss": "application/rss+xml",
    "json": "application/feed+json",
}
SITEMAP_NS = "http://www.sitemaps.org/schemas/sitemap/0.9"

_NOT_XML = re.compile("[^\t\n\r\x20-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")
# Escapes, `&` first: chained str.replace, several times faster than str.translate with a
# table of strings on article-length text (feeds are rendered on every publish).
_ESCAPES = (("&", "&amp;"), ("<", "&lt;"), (">", "&gt;"), ('"', "&quot;"), ("'", "&apos;"))
# RSS Best Practices Profile ("Encoding & and < in plain text"): hexadecimal references, which
# readers that guess whether RSS text is HTML read as text.
_RSS_PLAIN = (("&", "&#x26;"), ("<", "&#x3C;"), (">", "&#x3E;"))
_HTML = (("&", "&amp;"), ("<", "&lt;"), (">", "&gt;"))


def _escaped(value: str, escapes: tuple[tuple[str, str], ...]) -> str:
    for char, reference in escapes:
        value = value.replace(char, reference)
    return value


def newlines(value: str) -> str:
    """CR LF and CR as LF: what an XML parser makes of a raw CR, so every feed format,
    JSON Feed included, carries the same lines."""
    return value.replace("\r\n", "\n").replace("\r", "\n")


def plain(value: str) -> str:
    """Text as the XML documents carry it: characters XML 1.0 forbids dropped, newlines LF."""
    return newlines(_NOT_XML.sub("", value))


def xml_text(value: str) -> str:
    """`value` as XML character data or attribute value: forbidden characters dropped."""
    return _escaped(plain(value), _ESCAPES)


def rss_plain(value: str) -> str:
    """Plain text in an RSS element that readers may take for HTML (title, category)."""
    return _escaped(plain(value), _RSS_PLAIN)


def rss_html(value: str) -> str:
    """Plain text in an RSS `description`, which holds HTML: escaped as HTML, then as XML, so a
    reader shows `<script>` as text (RSS Best Practices Profile, "description")."""
    return _escaped(_escaped(plain(value), _HTML), _ESCAPES)


def entry_id(language: str, article_id: str) -> str:
    return f"{TAG_PREFIX}{language}/articles/{quote(article_id, safe='')}"


def feed_id(language: str, category: str | None) -> str:
    tail = f"/category/{quote(category, safe='')}" if category else ""
    return f"{TAG_PREFIX}{language}/feed{tail}"


def feed_path(language: str, kind: str, category: str | None) -> str:
    query = f"?category={quote(category, safe='')}" if category else ""
    return f"/api/v1/{language}/feed.{kind}{query}"


def _is_web_url(value: str | None) -> bool:
    """Sources hold any string as image_url; a feed names only an absolute http(s) URL."""
    if not value or any(ch.isspace() or not ch.isprintable() for ch in value):
        return False
    try:
        parts = urlsplit(value)
    except ValueError:
        return False
    return parts.scheme in ("http", "https") and bool(parts.netloc) and value.isascii()


def _rfc822(timestamp: str) -> str:
    moment: datetime = parse_timestamp(timestamp)
    return format_datetime(moment, usegmt=True)


def _title(urls: PublicUrls, language: str, category: str | None) -> str:
    return f"{urls.publication} ({bcp47(language)})" + (f": {category}" if category else "")


class _Feed(NamedTuple):
    """What an Atom or RSS document is rendered from (render_feed's arguments)."""

    urls: PublicUrls
    language: str
    category: str | None
    articles: Sequence[Mapping[str, Any]]
    updated: str


def render_feed(
    kind: str,
    urls: PublicUrls,
    language: str,
    category: str | None,
    articles: Sequence[Mapping[str, Any]],
    updated: str,
) -> bytes:
    """One feed document; `articles` newest first (parsed Article JSON), `updated` the
    feed's RFC 3339 time (the newest updated_at; the language's for an empty feed)."""
    if kind == "atom":
        return _atom(_Feed(urls, language, category, articles, updated))
    if kind == "rss":
        return _rss(_Feed(urls, language, category, articles, updated))
    return _json_feed(urls, language, category, articles)


def _atom(feed: _Feed) -> bytes:
    urls, language, category, articles, updated = feed
    t = xml_text
    out = [
        '<?xml version="1.0" encoding="utf-8"?>\n',
        f'<feed xmlns="http://www.w3.org/2005/Atom" xml:lang="{bcp47(language)}">\n',
        f"<id>{t(feed_id(language, category))}</id>\n",
        f"<title>{t(_title(urls, language, category))}</title>\n",
        f"<updated>{updated}</updated>\n",
        f"<author><name>{t(urls.publication)}</name></author>\n",
        f'<link rel="self" type="application/atom+xml" '
        f'href="{t(urls.site(feed_path(language, "atom", category)))}"/>\n',
        f'<link rel="alternate" href="{t(urls.site(f"/api/v1/{language}/articles"))}"/>\n',
    ]
    for a in articles:
        out.append("<entry>\n")
        out.append(f"<id>{t(entry_id(language, a['id']))}</id>\n")
        out.append(f"<title>{t(a['title'])}</title>\n")
        # Translations first: feed readers (feedparser) take the last alternate as the link.
        for other, other_id in a.get("translations", {}).items():
            out.append(
                f'<link rel="alternate" hreflang="{bcp47(other)}" '
                f'href="{t(urls.article(other, other_id))}"/>\n'
            )
        out.append(f'<link rel="alternate" href="{t(urls.article(language, a["id"]))}"/>\n')
        out.append(f"<published>{a['published_at']}</published>\n")
        out.append(f"<updated>{a['updated_at']}</updated>\n")
        if a.get("author"):
            out.append(f"<author><name>{t(a['author'])}</name></author>\n")
        out.append(f'<category term="{t(a["category"])}"/>\n')
        source_type = t(a["provenance"]["source_type"])
        out.append(f'<category scheme="{SOURCE_TYPE_SCHEME}" term="{source_type}"/>\n')
        out.append(f"<summary>{t(a['summary'])}</summary>\n")
        out.append(f'<content type="text">{t(a["content"])}</content>\n')
        out.append("</entry>\n")
    out.append("</feed>\n")
    return "".join(out).encode()


def _rss(feed: _Feed) -> bytes:
    urls, language, category, articles, updated = feed
    t = xml_text
    self_url = urls.site(feed_path(language, "rss", category))
    out = [
        '<?xml version="1.0" encoding="utf-8"?>\n',
        '<rss version="2.0" xmlns:atom="http://www.w3.org/2005/Atom">\n<channel>\n',
        f"<title>{rss_plain(_title(urls, language, category))}</title>\n",
        f"<link>{t(urls.site(f'/api/v1/{language}/articles'))}</link>\n",
        f"<description>{rss_html(_title(urls, language, category))}</description>\n",
        f"<language>{bcp47(language)}</language>\n",
        f"<lastBuildDate>{_rfc822(updated)}</lastBuildDate>\n",
        f'<atom:link rel="self" type="application/rss+xml" href="{t(self_url)}"/>\n',
    ]
    for a in articles:
        out.append("<item>\n")
        out.append(f"<title>{rss_plain(a['title'])}</title>\n")
        out.append(f"<link>{t(urls.article(language, a['id']))}</link>\n")
        out.append(f"<description>{rss_html(a['summary'])}</description>\n")
        out.append(f'<guid isPermaLink="false">{t(entry_id(language, a["id"]))}</guid>\n')
        out.append(f"<pubDate>{_rfc822(a['published_at'])}</pubDate>\n")
        out.append(f"<category>{rss_plain(a['category'])}</category>\n")
        source_type = t(a["provenance"]["source_type"])
        out.append(f'<category domain="{SOURCE_TYPE_SCHEME}">{source_type}</category>\n')
        out.append("</item>\n")
    out.append("</channel>\n</rss>\n")
    return "".join(out).encode()


def _json_feed(
    urls: PublicUrls, language: str, category: str | None, articles: Sequence[Mapping[str, Any]]
) -> bytes:
    items = []
    for a in articles:
        item: dict[str, Any] = {
            "id": entry_id(language, a["id"]),
            "url": urls.article(language, a["id"]),
            "title": newlines(a["title"]),
            "summary": newlines(a["summary"]),
            "content_text": newlines(a["content"]),
            "date_published": a["published_at"],
            "date_modified": a["updated_at"],
            "tags": [newlines(tag) for tag in (a["category"], *a.get("tags", []))],
            "language": bcp47(language),
            "_provenance": {
                "source_type": a["provenance"]["source_type"],
                "ai_generated": a["provenance"]["ai_generated"],
            },
        }
        if a.get("author"):
            item["authors"] = [{"name": newlines(a["author"])}]
        if _is_web_url(a.get("image_url")):
            item["image"] = a["image_url"]
        items.append(item)
    feed = {
        "version": "https://jsonfeed.org/version/1.1",
        "title": _title(urls, language, category),
        "home_page_url": urls.site(f"/api/v1/{language}/articles"),
        "feed_url": urls.site(feed_path(language, "json", category)),
        "language": bcp47(language),
        "authors": [{"name": urls.publication}],
        "items": items,
    }
    return orjson.dumps(feed) + b"\n"


# -- sitemaps ------------------------------------------------------------------------------

SITEMAP_HEAD = (
    b'<?xml version="1.0" encoding="utf-8"?>\n'
    b'<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9" '
    b'xmlns:xhtml="http://www.w3.org/1999/xhtml">\n'
)
SITEMAP_TAIL = b"\n</urlset>\n"


def sitemap_url(urls: PublicUrls, language: str, article: Mapping[str, Any]) -> bytes:
    """One article's <url> element: its URL, lastmod and hreflang alternates (itself and its
    translations, in language order)."""
    t = xml_text
    own = urls.article(language, article["id"])
    alternates = {language: article["id"], **article.get("translations", {})}
    links = "".join(
        f'<xhtml:link rel="alternate" hreflang="{bcp47(lang)}" '
        f'href="{t(own if lang == language else urls.article(lang, alternates[lang]))}"/>'
        for lang in LANGUAGES
        if lang in alternates
    )
    return (
        f"<url><loc>{t(own)}</loc><lastmod>{article['updated_at']}</lastmod>{links}</url>"
    ).encode()


def sitemap_page_path(language: str, page: int) -> str:
    return f"/sitemaps/{language}.xml" if page == 1 else f"/sitemaps/{language}-{page}.xml"


def sitemap_index(urls: PublicUrls, paths: Sequence[str]) -> bytes:
    out = [
        '<?xml version="1.0" encoding="utf-8"?>\n',
        f'<sitemapindex xmlns="{SITEMAP_NS}">\n',
        *(f"<sitemap><loc>{xml_text(urls.site(p))}</loc></sitemap>\n" for p in paths),
        "</sitemapindex>\n",
    ]
    return "".join(out).encode()


# Google's sitemap-news XSD allows `zh-cn|zh-tw|([a-z]{2,3})` only: lower case, not BCP 47.
_GOOGLE_NEWS_LANGUAGE = {"zh_cn": "zh-cn", "zh_tw": "zh-tw"}
NEWS_TAIL = b"</urlset>\n"
# Google News lists articles published in the last two days: up to the request, cut by the
# server (app/resources/feeds.py) from what the builder stored (app/builder/site.py).
NEWS_WINDOW_MICROS = 48 * 3600 * 1_000_000
NEWS_ENTRY_END = b"</url>\n"  # each entry is one line: a window is a prefix of the lines


def news_language(language: str) -> str:
    """`news:language` as Google News reads it (ISO 639, `zh-cn` and `zh-tw`)."""
    return _GOOGLE_NEWS_LANGUAGE.get(language, language)


def news_sitemap(urls: PublicUrls, articles: Sequence[tuple[str, Mapping[str, Any]]]) -> bytes:
    """Google News sitemap of (language, article) pairs, newest first, one `<url>` a line."""
    t = xml_text
    out = [
        '<?xml version="1.0" encoding="utf-8"?>\n',
        f'<urlset xmlns="{SITEMAP_NS}" '
        'xmlns:news="http://www.google.com/schemas/sitemap-news/0.9">\n',
    ]
    for language, a in articles:
        out.append(
            f"<url><loc>{t(urls.article(language, a['id']))}</loc><news:news>"
            f"<news:publication><news:name>{t(urls.publication)}</news:name>"
            f"<news:language>{news_language(language)}</news:language></news:publication>"
            f"<news:publication_date>{a['published_at']}</news:publication_date>"
            f"<news:title>{t(a['title'])}</news:title></news:news></url>\n"
        )
    return "".join(out).encode() + NEWS_TAIL
