"""Feeds, sitemaps and translations through the real HTTP stack (docs/delivery.md).

Every XML document is parsed with a strict parser (expat, via ElementTree) and feeds with
feedparser, which must not flag them (bozo); JSON Feeds are validated against the JSON Feed
1.1 schema (tests/jsonfeed-1.1.schema.json) with jsonschema-rs.
"""

from __future__ import annotations

import html
import json
import re
import xml.etree.ElementTree as ET
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any
from urllib.parse import quote

import feedparser
import jsonschema_rs
import numpy as np
import pytest
from falcon.testing import TestClient
from hypothesis import given
from hypothesis import strategies as st

from app.builder import builder, site
from app.bundle import format as fmt
from app.bundle.site import SiteData
from app.config import Settings
from app.languages import LANGUAGES
from app.resources import feeds
from app.syndication import entry_id
from app.wsgi import create_app
from tests.helpers import (
    JA_ID,
    KO_ID,
    expected_categories,
    expected_order,
    good,
    utc,
    write_jsonl,
)
from tests.http_support import decode_body

BASE = "http://127.0.0.1:8000"
NS = {
    "sm": "http://www.sitemaps.org/schemas/sitemap/0.9",
    "xhtml": "http://www.w3.org/1999/xhtml",
    "news": "http://www.google.com/schemas/sitemap-news/0.9",
    "atom": "http://www.w3.org/2005/Atom",
}
SCHEMA = json.loads((Path(__file__).parent / "jsonfeed-1.1.schema.json").read_text())
JSON_FEED = jsonschema_rs.validator_for(SCHEMA, validate_formats=True)
MEDIA = {
    "atom": "application/atom+xml",
    "rss": "application/rss+xml",
    "json": "application/feed+json",
}
TAG = {"zh_cn": "zh-CN", "zh_tw": "zh-TW"}


def url_of(language: str, article_id: str, base: str = BASE) -> str:
    return f"{base}/api/v1/{language}/articles/{quote(article_id, safe='')}"


def fetch(client: TestClient, path: str, query: str = "", status: int = 200) -> Any:
    result = client.simulate_get(path, query_string=query or None)
    assert result.status_code == status, (path, query, result.text[:300])
    return result


def feed_ids(client: TestClient, language: str, kind: str, category: str | None) -> list[str]:
    """Entry ids of one feed, after checking it is well formed and bozo clean."""
    query = f"category={quote(category)}" if category is not None else ""
    result = fetch(client, f"/api/v1/{language}/feed.{kind}", query)
    assert result.headers["content-type"] == MEDIA[kind]
    if kind == "json":
        document = json.loads(result.content)
        JSON_FEED.validate(document)
        return [item["id"] for item in document["items"]]
    ET.fromstring(result.content)  # strict XML 1.0
    parsed = feedparser.parse(result.content)
    assert not parsed.bozo, parsed.get("bozo_exception")
    return [entry.id for entry in parsed.entries]


def client_for(out: Path, tmp: Path) -> TestClient:
    return TestClient(create_app(Settings(bundle_dir=out, comments_dsn=f"sqlite:///{tmp}/c")))


# -- feeds -----------------------------------------------------------------------------------


@pytest.mark.parametrize("kind", ["atom", "rss", "json"])
def test_feeds_hold_the_newest_50_of_every_language_and_category(
    client: TestClient, records: list[dict[str, Any]], kind: str
) -> None:
    for language in LANGUAGES:
        for category in [None, *expected_categories(records, language)]:
            expected = expected_order(records, language, category)[:50]
            ids = feed_ids(client, language, kind, category)
            assert ids == [entry_id(language, a["id"]) for a in expected], (language, category)


def test_atom_entries_carry_public_links_dates_and_translations(
    client: TestClient, records: list[dict[str, Any]]
) -> None:
    for language in ("ko", "en", "ja", "fr"):
        parsed = feedparser.parse(fetch(client, f"/api/v1/{language}/feed.atom").content)
        assert parsed.feed.language == TAG.get(language, language)
        expected = expected_order(records, language)[:50]
        for entry, article in zip(parsed.entries, expected, strict=True):
            assert entry.title == article["title"]
            assert entry.link == url_of(language, article["id"])
            assert entry.published == article["published_at"]
            assert entry.updated == article["updated_at"]
            alternates = {link.hreflang: link.href for link in entry.links if link.get("hreflang")}
            assert alternates == {
                TAG.get(lang, lang): url_of(lang, other)
                for lang, other in article["translations"].items()
            }


def test_rss_items_link_to_public_urls(client: TestClient, records: list[dict[str, Any]]) -> None:
    parsed = feedparser.parse(fetch(client, "/api/v1/en/feed.rss").content)
    expected = expected_order(records, "en")[:50]
    assert len(parsed.entries) == 50 < len(expected_order(records, "en"))
    for entry, article in zip(parsed.entries, expected, strict=True):
        assert entry.link == url_of("en", article["id"])
        assert entry.guidislink is False


def test_unknown_category_gives_a_valid_empty_feed(client: TestClient) -> None:
    for kind in ("atom", "rss", "json"):
        assert feed_ids(client, "en", kind, "no such <category> &") == []
    # Empty `category=` means every category, as on the list.
    assert feed_ids(client, "en", "atom", "") == feed_ids(client, "en", "atom", None)


def test_feed_caching_head_and_language_check(client: TestClient) -> None:
    got = fetch(client, "/api/v1/ko/feed.atom")
    assert got.headers["cache-control"].startswith("public, max-age=")
    head = client.simulate_head("/api/v1/ko/feed.atom")
    assert head.status_code == 200 and head.content == b""
    assert head.headers["etag"] == got.headers["etag"]
    assert head.headers["content-type"] == "application/atom+xml"
    again = client.simulate_get(
        "/api/v1/ko/feed.atom", headers={"If-None-Match": got.headers["etag"]}
    )
    assert again.status_code == 304
    other = fetch(client, "/api/v1/ko/feed.rss")
    assert other.headers["etag"] != got.headers["etag"]
    bad = client.simulate_get("/api/v1/xx/feed.atom", query_string="category=a")
    assert bad.status_code == 400 and bad.json == {"detail": "Unsupported language: xx"}


# -- sitemaps --------------------------------------------------------------------------------


def sitemap_urls(client: TestClient, path: str) -> dict[str, tuple[str, dict[str, str]]]:
    """loc -> (lastmod, {hreflang: href}) of one sitemap page."""
    result = fetch(client, path)
    assert result.headers["content-type"] == "application/xml"
    root = ET.fromstring(result.content)
    assert root.tag == f"{{{NS['sm']}}}urlset"
    out = {}
    for url in root.findall("sm:url", NS):
        links = {
            link.get("hreflang"): link.get("href")
            for link in url.findall("xhtml:link", NS)
            if link.get("rel") == "alternate"
        }
        loc = url.findtext("sm:loc", namespaces=NS)
        assert loc not in out
        out[loc] = (url.findtext("sm:lastmod", namespaces=NS), links)
    return out


def index_locs(client: TestClient) -> list[str]:
    root = ET.fromstring(fetch(client, "/sitemap.xml").content)
    assert root.tag == f"{{{NS['sm']}}}sitemapindex"
    return [s.findtext("sm:loc", namespaces=NS) for s in root.findall("sm:sitemap", NS)]


def test_sitemaps_list_every_article_with_lastmod_and_symmetric_hreflang(
    client: TestClient, records: list[dict[str, Any]]
) -> None:
    assert index_locs(client) == [
        *(f"{BASE}/sitemaps/{language}.xml" for language in LANGUAGES),
        f"{BASE}/sitemaps/news.xml",
    ]
    everything: dict[str, dict[str, str]] = {}
    for language in LANGUAGES:
        urls = sitemap_urls(client, f"/sitemaps/{language}.xml")
        expected = expected_order(records, language)
        assert list(urls) == [url_of(language, a["id"]) for a in expected]
        for article in expected:
            lastmod, links = urls[url_of(language, article["id"])]
            assert lastmod == article["updated_at"]
            group = {language: article["id"], **article["translations"]}
            assert links == {TAG.get(lang, lang): url_of(lang, i) for lang, i in group.items()}
            everything[url_of(language, article["id"])] = links
    # Symmetric: every alternate lists the same group, itself included.
    for links in everything.values():
        for href in links.values():
            assert everything[href] == links
    assert any(len(links) == 4 for links in everything.values())  # the economy story


def test_sitemap_head_etag_and_unknown_names(client: TestClient) -> None:
    got = fetch(client, "/sitemaps/en.xml")
    head = client.simulate_head("/sitemaps/en.xml")
    assert head.status_code == 200 and head.headers["etag"] == got.headers["etag"]
    assert (
        client.simulate_get("/sitemaps/en.xml", headers={"If-None-Match": got.headers["etag"]})
    ).status_code == 304
    for name in ("xx", "en-1", "en-2", "en-0", "EN", "news-2", "en-x"):
        missing = client.simulate_get(f"/sitemaps/{name}.xml")
        assert missing.status_code == 404 and missing.json == {"detail": "Not Found"}, name


def test_sitemap_pages_split_at_the_page_size(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(fmt, "SITEMAP_PAGE_URLS", 7)
    src, out = tmp_path / "src", tmp_path / "out"
    records = [
        good(f"e{i:02d}", published_at=f"2026-05-{1 + i % 28:02d}T00:00:00Z") for i in range(23)
    ]
    records += [good(f"k{i}", language="ko") for i in range(7)]
    write_jsonl(src / "a.jsonl", records)
    builder.build(src, out, jobs=1)
    client = client_for(out, tmp_path)
    locs = index_locs(client)
    en_pages = [f"{BASE}/sitemaps/en.xml", *(f"{BASE}/sitemaps/en-{n}.xml" for n in (2, 3, 4))]
    assert [loc for loc in locs if "/en" in loc] == en_pages
    assert f"{BASE}/sitemaps/ko.xml" in locs and f"{BASE}/sitemaps/ko-2.xml" not in locs
    seen: list[str] = []
    for page in en_pages:
        urls = sitemap_urls(client, page.removeprefix(BASE))
        assert 1 <= len(urls) <= 7
        seen += list(urls)
    assert seen == [url_of("en", a["id"]) for a in expected_order(records, "en")]
    assert client.simulate_get("/sitemaps/en-5.xml").status_code == 404
    assert len(sitemap_urls(client, "/sitemaps/ko.xml")) == 7
    assert sitemap_urls(client, "/sitemaps/de.xml") == {}  # an empty language has page 1


def test_news_sitemap_covers_the_48_hours_up_to_the_request(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    newest = datetime(2026, 6, 10, 12, 0, tzinfo=UTC)
    monkeypatch.setattr(feeds, "clock", newest.timestamp)

    def at(delta: timedelta) -> str:
        return (newest - delta).isoformat()

    records = [
        good("now", published_at=at(timedelta(0)), title="Fresh & <new>"),
        good("edge", language="zh_tw", published_at=at(timedelta(hours=48))),
        good("inside", language="ja", published_at=at(timedelta(hours=47, minutes=59))),
        good("old", published_at=at(timedelta(hours=48, seconds=1))),
    ]
    src, out = tmp_path / "src", tmp_path / "out"
    write_jsonl(src / "a.jsonl", records)
    builder.build(src, out, jobs=1)
    client = client_for(out, tmp_path)
    root = ET.fromstring(fetch(client, "/sitemaps/news.xml").content)
    urls = root.findall("sm:url", NS)
    assert [u.findtext("sm:loc", namespaces=NS) for u in urls] == [
        url_of("en", "now"),
        url_of("ja", "inside"),
        url_of("zh_tw", "edge"),
    ]
    first = urls[0].find("news:news", NS)
    assert first is not None
    assert first.findtext("news:publication/news:name", namespaces=NS) == "News"
    assert first.findtext("news:publication/news:language", namespaces=NS) == "en"
    assert first.findtext("news:title", namespaces=NS) == "Fresh & <new>"
    assert first.findtext("news:publication_date", namespaces=NS) == utc(records[0]["published_at"])
    # Google's sitemap-news XSD: `zh-cn|zh-tw|([a-z]{2,3})`, not BCP 47's zh-TW.
    assert urls[2].findtext("news:news/news:publication/news:language", namespaces=NS) == "zh-tw"
    manifest = (out / fmt.MANIFEST).read_bytes()

    def listed(now: datetime, coding: str | None = None) -> list[str]:
        monkeypatch.setattr(feeds, "clock", now.timestamp)
        r = client.simulate_get("/sitemaps/news.xml", headers={"Accept-Encoding": coding or ""})
        assert r.status_code == 200 and r.headers["content-type"] == "application/xml"
        root = ET.fromstring(decode_body(r.headers.get("content-encoding"), r.content))
        return [u.findtext("sm:loc", namespaces=NS) or "" for u in root.findall("sm:url", NS)]

    # The window follows the clock: when publishing pauses, old articles leave the sitemap.
    for coding in (None, "gzip", "zstd", "br"):
        assert listed(newest + timedelta(hours=47, minutes=59), coding) == [url_of("en", "now")]
        assert listed(newest + timedelta(hours=48, seconds=1), coding) == []
        assert listed(newest + timedelta(seconds=1), coding) == [
            url_of("en", "now"),
            url_of("ja", "inside"),
        ]
    # A clock behind the articles: everything stored (the 48 hours up to the newest) is in.
    assert len(listed(newest - timedelta(days=30))) == 3
    assert (out / fmt.MANIFEST).read_bytes() == manifest  # the bundle holds no clock
    builder.build(src, out, jobs=1, full=True)
    assert (out / fmt.MANIFEST).read_bytes() == manifest
    monkeypatch.setattr(feeds, "clock", newest.timestamp)
    # At most NEWS_MAX entries (1,000; lowered here), the newest.
    monkeypatch.setattr(site, "NEWS_MAX", 2)
    builder.build(src, out, jobs=1, full=True)
    capped = ET.fromstring(fetch(client_for(out, tmp_path / "c2"), "/sitemaps/news.xml").content)
    assert len(capped.findall("sm:url", NS)) == 2


# -- hostile text ----------------------------------------------------------------------------

HOSTILE = (
    "ctl\x01\x02\x08\x0b\x0c\x0e\x1f\x7f\x85 nul\x00 ffff\ufffe\uffff ]]> <b>&amp;</b> "
    "\"quote\" 'apos' \u2028\u2029 \u202e rtl \U0001f600 &#0; <![CDATA[x]]> <!-- c -->"
)


def test_hostile_text_never_breaks_xml(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(feeds, "clock", lambda: 0.0)  # every stored news entry in the window
    records = []
    for n, language in enumerate(LANGUAGES):
        for i in range(3):
            records.append(
                good(
                    f"{language}-{i}<&>\"'%20 é",
                    language=language,
                    title=f"T{i} {HOSTILE}",
                    summary=HOSTILE,
                    content=f"{HOSTILE}\n\n{HOSTILE[::-1]}",
                    category=f"cat{i % 2} {HOSTILE[:20]}",
                    tags=[HOSTILE, "x\x01y"],
                    author=f"A {HOSTILE}",
                    image_url=f"javascript:{HOSTILE}",
                    published_at=f"2026-07-01T0{n}:0{i}:00Z",
                    story_id=f"story{i}\u202e",
                )
            )
    src, out = tmp_path / "src", tmp_path / "out"
    write_jsonl(src / "a.jsonl", records)
    builder.build(src, out, jobs=1)
    client = client_for(out, tmp_path)
    for language in LANGUAGES:
        for category in [None, *expected_categories(records, language)]:
            for kind in ("atom", "rss", "json"):
                ids = feed_ids(client, language, kind, category)
                assert len(ids) == (3 if category is None else len(ids)) and ids
        parsed = feedparser.parse(fetch(client, f"/api/v1/{language}/feed.atom").content)
        # The text survives, minus what XML 1.0 cannot carry.
        assert "]]> <b>&amp;</b>" in parsed.entries[0].summary
        assert "\U0001f600" in parsed.entries[0].summary
        urls = sitemap_urls(client, f"/sitemaps/{language}.xml")
        assert len(urls) == 3
        for _, links in urls.values():
            assert len(links) == len(LANGUAGES)
    ET.fromstring(fetch(client, "/sitemap.xml").content)
    news = ET.fromstring(fetch(client, "/sitemaps/news.xml").content)
    assert len(news.findall("sm:url", NS)) == len(records)


# -- ids, translations, public URLs ----------------------------------------------------------


def test_entry_ids_are_stable_across_an_incremental_build(tmp_path: Path) -> None:
    src, out = tmp_path / "src", tmp_path / "out"
    records = [good(f"a{i}", published_at=f"2026-08-0{1 + i}T00:00:00Z") for i in range(5)]
    write_jsonl(src / "a.jsonl", records)
    builder.build(src, out, jobs=1)
    before = feed_ids(client_for(out, tmp_path / "1"), "en", "atom", None)
    changed = [{**records[0], "title": "Changed"}, *records[1:]]
    write_jsonl(src / "a.jsonl", changed)
    write_jsonl(src / "b.jsonl", [good("new", published_at="2026-09-01T00:00:00Z")])
    assert builder.build_report(src, out, jobs=1).incremental
    after = feed_ids(client_for(out, tmp_path / "2"), "en", "atom", None)
    assert after == [entry_id("en", "new"), *before]
    assert before[-1] == "tag:news-article-api,2026:en/articles/a0"


def test_translations_in_article_json(client: TestClient) -> None:
    def translations(language: str, article_id: str) -> dict[str, str]:
        path = f"/api/v1/{language}/articles/{quote(article_id, safe='')}"
        return fetch(client, path).json["translations"]

    assert translations("ko", KO_ID) == {"ja": JA_ID, "zh_tw": "台灣-1", "fr": "shared-id"}
    assert translations("fr", "shared-id") == {"ko": KO_ID, "ja": JA_ID, "zh_tw": "台灣-1"}
    assert translations("ko", "it-1") == {"en": "tie-c"}
    assert translations("en", "tie-c") == {"ko": "it-1"}
    assert translations("ko", "shared-id") == {}  # same id, no story: not a translation


def test_a_publish_in_one_language_updates_the_others(tmp_path: Path) -> None:
    src, out, full = tmp_path / "src", tmp_path / "out", tmp_path / "full"
    write_jsonl(src / "en.jsonl", [good("e", story_id="s"), good("e2")])
    write_jsonl(src / "fr.jsonl", [good("f", language="fr", story_id="s")])
    builder.build(src, out, jobs=1)
    old = fetch(client_for(out, tmp_path / "1"), "/api/v1/en/articles/e")
    assert old.json["translations"] == {"fr": "f"}
    steps = [
        {"ko.jsonl": [good("k", language="ko", story_id="s")]},  # a language joins
        {"fr.jsonl": [good("f", language="fr", story_id="t")]},  # one leaves for a new story
        {"fr.jsonl": [good("f2", language="fr", story_id="s")]},  # another id joins
        {"ko.jsonl": []},  # a retraction
    ]
    for n, step in enumerate(steps):
        for name, lines in step.items():
            write_jsonl(src / name, lines)
        report = builder.build_report(src, out, jobs=1)
        assert report.incremental
        builder.build(src, full, jobs=1, full=True)
        a, b = client_for(out, tmp_path / f"a{n}"), client_for(full, tmp_path / f"b{n}")
        for path in (
            "/api/v1/en/articles/e",
            "/api/v1/ko/articles/k",
            "/api/v1/fr/articles/f",
            "/api/v1/fr/articles/f2",
            "/sitemaps/en.xml",
            "/sitemaps/fr.xml",
            "/api/v1/en/feed.atom",
        ):
            x, y = a.simulate_get(path), b.simulate_get(path)
            assert (x.status_code, x.content, x.headers.get("etag")) == (
                y.status_code,
                y.content,
                y.headers.get("etag"),
            ), (n, path)
    final = fetch(client_for(out, tmp_path / "z"), "/api/v1/en/articles/e")
    assert final.json["translations"] == {"fr": "f2"}
    assert final.headers["etag"] != old.headers["etag"]


def test_public_urls_are_baked_in_by_the_builder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    src, out = tmp_path / "src", tmp_path / "out"
    write_jsonl(
        src / "a.jsonl", [good("a b", story_id="s"), good("c", language="ko", story_id="s")]
    )
    builder.build(src, out, jobs=1)
    monkeypatch.setenv("NEWS_PUBLIC_BASE_URL", "https://news.example/")
    monkeypatch.setenv("NEWS_ARTICLE_URL_TEMPLATE", "{base}/{language}/{id}.html")
    monkeypatch.setenv("NEWS_PUBLICATION_NAME", "The Example Times")
    report = builder.build_report(src, out, jobs=1)
    assert not report.incremental  # every feed and sitemap fragment holds the URLs
    manifest = json.loads((out / "manifest.json").read_bytes())
    assert manifest["site"]["public_urls"] == {
        "base": "https://news.example",
        "article_template": "{base}/{language}/{id}.html",
        "publication": "The Example Times",
    }
    client = client_for(out, tmp_path)
    parsed = feedparser.parse(fetch(client, "/api/v1/en/feed.atom").content)
    assert parsed.entries[0].link == "https://news.example/en/a%20b.html"
    assert parsed.entries[0].id == entry_id("en", "a b")  # not from the URL settings
    assert parsed.feed.title == "The Example Times (en)"
    urls = sitemap_urls(client, "/sitemaps/ko.xml")
    assert urls["https://news.example/ko/c.html"][1] == {
        "en": "https://news.example/en/a%20b.html",
        "ko": "https://news.example/ko/c.html",
    }
    assert index_locs(client)[0] == "https://news.example/sitemaps/ko.xml"
    assert builder.build_report(src, out, jobs=1).incremental  # same settings: incremental again


# -- RSS text (RSS Best Practices Profile) ------------------------------------------------------

TRICKY = [
    "<script>alert(1)</script> kept",
    "AT&T & <b>bold</b> 5 < 6 > 4",
    "&amp; is literal, &#x3C; too",
    "lines\r\nwith CR LF\rand CR",
    "plain",
]


def _as_text(value: str, detail: Any) -> str:
    """What a reader shows: HTML content unescaped, plain text as it is."""
    return html.unescape(value) if detail.type == "text/html" else value


def test_rss_text_reaches_readers_as_text_and_cr_is_normalised(tmp_path: Path) -> None:
    records = [
        good(
            f"t{i}",
            title=text,
            summary=f"{text} summary",
            category=f"c{i} {text}",
            published_at=f"2026-05-0{i + 1}T00:00:00Z",
        )
        for i, text in enumerate(TRICKY)
    ]
    src, out = tmp_path / "src", tmp_path / "out"
    write_jsonl(src / "a.jsonl", records)
    builder.build(src, out, jobs=1)
    client = client_for(out, tmp_path)
    expected = {r["id"]: r for r in records}
    for kind in ("rss", "atom", "json"):
        raw = fetch(client, f"/api/v1/en/feed.{kind}").content
        assert b"\r" not in raw, kind  # no raw CR, and none escaped in JSON either
        assert b"\\r" not in raw, kind
    raw = fetch(client, "/api/v1/en/feed.rss").content
    assert b"<script" not in raw and b"&lt;script" not in raw  # hex references or HTML-escaped
    parsed = feedparser.parse(raw)
    assert not parsed.bozo
    items = ET.fromstring(raw).findall("channel/item")
    for entry, item in zip(parsed.entries, items, strict=True):
        article = expected[entry.id.rsplit("/", 1)[1]]
        title, summary, category = (
            article[k].replace("\r\n", "\n").replace("\r", "\n")
            for k in ("title", "summary", "category")
        )
        # The profile's plain text: the XML text is the title; the description is HTML.
        assert item.findtext("title") == title
        assert item.findtext("category") == category
        assert html.unescape(item.findtext("description") or "") == summary
        assert _as_text(entry.summary, entry.summary_detail) == summary
        # feedparser guesses whether a title is HTML; text without entity-like runs stays text.
        if not re.search(r"&#?\w+;", title):
            assert _as_text(entry.title, entry.title_detail) == title
    # Every parser reads the same text in Atom and JSON Feed.
    atom = feedparser.parse(fetch(client, "/api/v1/en/feed.atom").content)
    items = json.loads(fetch(client, "/api/v1/en/feed.json").content)["items"]
    assert [e.title for e in atom.entries] == [i["title"] for i in items]
    assert all("\n" in i["title"] for i in items if i["id"].endswith("t3"))


@given(
    published=st.lists(st.integers(0, 10**12), max_size=60),
    since=st.integers(-1, 10**12 + 1),
)
def test_news_window_counts_entries_at_or_after_the_cut(published: list[int], since: int) -> None:
    descending = sorted(published, reverse=True)
    site = SiteData(({}, '""'), ({}, '""'), "c", 1, {}, np.asarray(descending, np.int64), [], 0)
    assert site.news_window(since) == sum(1 for p in descending if p >= since)
