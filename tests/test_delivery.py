"""Compressed delivery (docs/delivery.md): every encoding of every endpoint decompresses, with
the reference decoders, to exactly the identity body; each encoding has its own ETag and 304;
Vary, Cache-Control and Surrogate-Key are on every cacheable answer.
"""

from __future__ import annotations

import random
import re
import zlib
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pytest
import zstandard
from falcon.testing import TestClient
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from app import compression, negotiation, surrogate_keys
from app.builder import builder, cli
from app.bundle import format as fmt
from app.bundle.reader import Bundle
from app.compression import CODEC_ID
from app.config import Settings
from app.delivery import PAGE_OFFERS
from app.languages import LANGUAGES
from app.whole_pages import WHOLE_CODEC_ID
from app.wsgi import create_app
from tests.conftest import CACHE_CONTROL
from tests.helpers import KO_ID, POPULATED, article_path, good, write_jsonl
from tests.http_support import decode_body

CODINGS = ("gzip", "zstd", "br")
KEY = re.compile(r"[a-z0-9_-]{1,45}\Z")
WORDS = ["title", "paragraph", "news", "the", "경제", "日本", "café", "zzzz-none"]


def fetch(client: TestClient, path: str, query: str | None, coding: str | None) -> Any:
    headers = {"Accept-Encoding": coding} if coding else None
    return client.simulate_get(path, query_string=query, headers=headers)


def assert_codings_match(client: TestClient, path: str, query: str | None = None) -> None:
    """Every coding the server sends for this request decodes to the identity body, under its
    own tag, with the same caching headers."""
    identity = fetch(client, path, query, None)
    assert identity.status_code == 200, (path, query)
    assert "content-encoding" not in identity.headers
    assert identity.headers["vary"] == "Accept-Encoding"
    etag = identity.headers["etag"]
    for coding in CODINGS:
        r = fetch(client, path, query, coding)
        assert r.status_code == 200
        sent = r.headers.get("content-encoding")
        assert decode_body(sent, r.content) == identity.content, (path, query, coding)
        assert r.headers["vary"] == "Accept-Encoding"
        assert r.headers["cache-control"] == identity.headers["cache-control"]
        assert r.headers["surrogate-key"] == identity.headers["surrogate-key"]
        # Every coding everywhere (docs/api.md §8): no endpoint falls back to identity.
        assert sent == coding, (path, query, coding)
        # Composed from pieces (one article), or compressed whole (a page, in every coding).
        assert r.headers["etag"] in (
            f'{etag[:-1]}-{coding}.{CODEC_ID}"',
            f'{etag[:-1]}-{coding}.w{WHOLE_CODEC_ID}"',
        )
        assert int(r.headers["content-length"]) == len(r.content)


def ids_of(client: TestClient, language: str) -> list[str]:
    body = client.simulate_get(f"/api/v1/{language}/articles", query_string="page_size=100")
    return [item["id"] for item in body.json["items"]]


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    language=st.sampled_from(POPULATED),
    page=st.integers(1, 8),
    size=st.integers(1, 100),
    endpoint=st.sampled_from(
        ["list", "category", "latest", "search", "get", "categories", "feed", "sitemap"]
    ),
    word=st.sampled_from(WORDS),
    pick=st.integers(0, 10**6),
)
def test_every_encoding_decodes_to_the_identity_body(
    client: TestClient,
    language: str,
    page: int,
    size: int,
    endpoint: str,
    word: str,
    pick: int,
) -> None:
    base = f"/api/v1/{language}"
    paging = f"page={page}&page_size={size}"
    if endpoint == "list":
        assert_codings_match(client, f"{base}/articles", paging)
    elif endpoint == "category":
        categories = client.simulate_get(f"{base}/categories").json
        category = categories[pick % len(categories)] if categories else "none"
        assert_codings_match(client, f"{base}/articles", f"{paging}&category={quote(category)}")
    elif endpoint == "latest":
        assert_codings_match(client, f"{base}/articles/latest", f"limit={min(size, 50)}")
    elif endpoint == "search":
        assert_codings_match(client, f"{base}/articles/search", f"q={quote(word)}&{paging}")
    elif endpoint == "get":
        ids = ids_of(client, language)
        assert_codings_match(client, article_path(language, ids[pick % len(ids)]))
    elif endpoint == "feed":
        categories = client.simulate_get(f"{base}/categories").json
        choices = [None, "no such category", *categories]
        category = choices[pick % len(choices)]
        kind = ("atom", "rss", "json")[page % 3]
        query = None if category is None else f"category={quote(category)}"
        assert_codings_match(client, f"{base}/feed.{kind}", query)
    elif endpoint == "sitemap":
        assert_codings_match(client, f"/sitemaps/{language}.xml")
        assert_codings_match(client, ("/sitemap.xml", "/sitemaps/news.xml")[pick % 2])
    else:
        assert_codings_match(client, f"{base}/categories")


def test_pages_across_segments_and_deletions_decode(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Pieces from several segments, with deleted documents between them: pages join one
    run per article (sitemap pages: per run of consecutive records) and still decode
    exactly."""
    monkeypatch.setattr(fmt, "SITEMAP_PAGE_URLS", 9)  # sitemap pages cross segments too
    rng = random.Random(4)
    src, out = tmp_path / "src", tmp_path / "out"
    records: list[dict[str, Any]] = []
    for day in range(3):
        records = [
            good(
                f"d{day}-{i}",
                title=f"title {rng.random()}",
                content=" ".join(rng.choice(WORDS) for _ in range(40)),
                category=rng.choice(["a", "b"]),
                published_at=f"2026-03-0{rng.randint(1, 9)}T00:00:00Z",
            )
            for i in range(12)
        ]
        write_jsonl(src / f"d{day}.jsonl", records)
        builder.build(src, out, jobs=1, merge="none")
    write_jsonl(src / "d2.jsonl", records[::2])  # retract every other article of the last day
    builder.build(src, out, jobs=1, merge="none")
    client = TestClient(
        create_app(Settings(bundle_dir=out, comments_dsn=f"sqlite:///{tmp_path}/c"))
    )
    assert_codings_match(client, "/api/v1/en/articles", "page_size=100")
    assert_codings_match(client, "/api/v1/en/articles", "page=2&page_size=7&category=a")
    assert_codings_match(client, "/api/v1/en/articles/latest", "limit=50")
    assert_codings_match(client, "/api/v1/en/articles/search", "q=title&page_size=100")
    assert_codings_match(client, "/api/v1/en/articles/d0-0")
    assert len(Bundle.load(out).languages["en"].segments) == 3
    for page in ("en", "en-2", "en-3", "en-4"):
        assert_codings_match(client, f"/sitemaps/{page}.xml")
    assert client.simulate_get("/sitemaps/en-5.xml").status_code == 404
    for kind in ("atom", "rss", "json"):
        assert_codings_match(client, f"/api/v1/en/feed.{kind}")
        assert_codings_match(client, f"/api/v1/en/feed.{kind}", "category=b")


@pytest.mark.parametrize("coding", CODINGS)
def test_each_encoding_has_its_own_etag_and_304(client: TestClient, coding: str) -> None:
    for path, query in (
        ("/api/v1/en/articles", "page_size=5"),
        ("/api/v1/en/articles/latest", None),
        ("/api/v1/en/articles/search", "q=title"),
        (article_path("ko", KO_ID), None),
        ("/api/v1/en/categories", None),
        ("/api/v1/en/feed.atom", None),
        ("/api/v1/ko/feed.json", "category=경제"),
        ("/api/v1/en/feed.rss", "category=nothing-here"),
        ("/sitemap.xml", None),
        ("/sitemaps/ja.xml", None),
        ("/sitemaps/news.xml", None),
    ):
        identity = fetch(client, path, query, None).headers["etag"]
        first = fetch(client, path, query, coding)
        tag = first.headers["etag"]
        headers = {"Accept-Encoding": coding, "If-None-Match": tag}
        again = client.simulate_get(path, query_string=query, headers=headers)
        assert again.status_code == 304 and again.content == b""
        assert again.headers["etag"] == tag and again.headers["vary"] == "Accept-Encoding"
        assert "content-encoding" not in again.headers
        if tag != identity:  # the identity tag does not validate another encoding's body
            headers["If-None-Match"] = identity
            other = client.simulate_get(path, query_string=query, headers=headers)
            assert other.status_code == 200 and other.content == first.content
        head = client.simulate_head(path, query_string=query, headers={"Accept-Encoding": coding})
        assert head.content == b"" and head.headers["etag"] == tag
        assert head.headers["content-length"] == first.headers["content-length"]


def test_browser_header_gets_a_free_encoding_and_the_smallest(client: TestClient) -> None:
    browser = {"Accept-Encoding": "gzip, deflate, br, zstd"}
    page = client.simulate_get("/api/v1/en/articles", headers=browser)
    assert page.headers["content-encoding"] == "zstd"  # stored pieces joined: no CRC to compute
    one = client.simulate_get(article_path("ko", KO_ID), headers=browser)
    sizes = {c: len(fetch(client, article_path("ko", KO_ID), None, c).content) for c in CODINGS}
    assert one.headers["content-encoding"] == min(("br", "zstd"), key=lambda c: (sizes[c], c))
    sitemap = client.simulate_get("/sitemaps/en.xml", headers=browser)
    assert sitemap.headers["content-encoding"] == "zstd"  # composed like a list page
    for path in ("/api/v1/en/feed.atom", "/sitemap.xml"):  # whole documents, as stored
        sizes = {c: len(fetch(client, path, None, c).content) for c in CODINGS}
        chosen = client.simulate_get(path, headers=browser).headers["content-encoding"]
        assert sizes[chosen] == min(sizes.values()), (path, sizes)
    # The news sitemap cut at request time (this corpus is older than 48 hours) is compressed
    # then, like a page: zstd, the cheapest.
    news = client.simulate_get("/sitemaps/news.xml", headers=browser)
    assert news.headers["content-encoding"] == "zstd"


def test_surrogate_keys(client: TestClient) -> None:
    get = client.simulate_get(article_path("ko", KO_ID))
    assert get.headers["surrogate-key"].split() == [
        "lang-ko",
        surrogate_keys.article_key("ko", KO_ID),
    ]
    listed = client.simulate_get("/api/v1/zh_tw/articles")
    assert listed.headers["surrogate-key"].split() == ["lang-zh_tw", "list-zh_tw"]
    cat = client.simulate_get("/api/v1/en/articles", query_string="category=politics")
    assert cat.headers["surrogate-key"].split() == [
        "lang-en",
        surrogate_keys.category_key("en", "politics"),
    ]
    for path in (
        "/api/v1/en/articles/latest",
        "/api/v1/en/categories",
        "/api/v1/en/feed.atom",
        "/api/v1/en/feed.json",
        "/sitemaps/en.xml",
    ):
        keys = client.simulate_get(path).headers["surrogate-key"].split()
        assert keys == ["lang-en", "list-en"], path
    feed = client.simulate_get("/api/v1/en/feed.rss", query_string="category=politics")
    assert feed.headers["surrogate-key"] == cat.headers["surrogate-key"]
    # A category with no article: its empty feed shows the language's newest time.
    empty = client.simulate_get("/api/v1/en/feed.rss", query_string="category=nothing")
    assert empty.headers["surrogate-key"].split() == [
        "lang-en",
        surrogate_keys.category_key("en", "nothing"),
        "list-en",
    ]
    for path in ("/sitemap.xml", "/sitemaps/news.xml"):
        assert client.simulate_get(path).headers["surrogate-key"] == surrogate_keys.SITE_KEY
    weird = ["a b", "x,y", "\u0000", "é" * 200, "\ud800"]
    for key in [surrogate_keys.article_key("en", i) for i in weird] + ["lang-zh_cn"]:
        assert KEY.match(key), key
    assert len({surrogate_keys.article_key(lang, "same") for lang in ("en", "fr")}) == 2


def test_cache_control_carries_stale_directives(client: TestClient) -> None:
    for path in (
        "/api/v1/en/articles",
        article_path("ko", KO_ID),
        "/api/v1/en/categories",
        "/api/v1/en/feed.atom",
        "/sitemap.xml",
        "/sitemaps/en.xml",
    ):
        assert client.simulate_get(path).headers["cache-control"] == CACHE_CONTROL


# -- the framing, unit by unit --------------------------------------------------------------


@pytest.mark.parametrize("n", [0, 1, 255, 256, 65535, 65536, 65791, 65792, 200_000])
def test_request_time_framing_decodes(n: int) -> None:
    data = bytes(random.Random(n).getrandbits(8) for _ in range(n))
    raw = compression.stored_deflate(data) + compression.DEFLATE_END
    assert zlib.decompress(raw, -15) == data
    frame = compression.raw_zstd_frame(data)
    if n:
        reader = zstandard.ZstdDecompressor().decompressobj(read_across_frames=True)
        assert reader.decompress(frame) == data
    else:
        assert frame == b""


@given(
    st.lists(st.binary(max_size=3000), max_size=8),
    st.binary(max_size=300),
    st.sampled_from([b",", b"\n"]),
)
def test_pieces_compose(records: list[bytes], head: bytes, sep: bytes) -> None:
    """Separately compressed pieces, framed head and separators (JSON's comma, the sitemap's
    newline) compose into one stream."""
    identity = head + sep.join(records)
    separators = compression.separators(sep)
    gz = [compression.stored_deflate(head)]
    zs = [compression.raw_zstd_frame(head)]
    for i, record in enumerate(records):
        if i:
            gz.append(separators["gzip"])
            zs.append(separators["zstd"])
        gz.append(compression.gzip_piece(record))
        zs.append(compression.zstd_piece(record))
    assert decode_body("gzip", compression.gzip_body(gz, [identity])) == identity
    if identity:
        assert decode_body("zstd", b"".join(zs)) == identity


@settings(max_examples=200, deadline=None)
@given(st.lists(st.binary(max_size=5000), max_size=8), st.integers(0, 2**32 - 1))
def test_isal_crc32_chains_like_zlib(parts: list[bytes], start: int) -> None:
    """The gzip trailer's CRC-32 comes from ISA-L (compression._crc32): chained over the
    slices of a page it must equal zlib's, or every composed gzip body would be corrupt."""
    ours = theirs = start
    for part in parts:
        ours = compression._crc32(memoryview(part), ours)
        theirs = zlib.crc32(part, theirs)
    assert ours == theirs


@given(st.binary(max_size=5000))
def test_precompress_round_trips(body: bytes) -> None:
    for coding, data in compression.precompress(body).items():
        assert decode_body(coding, data) == body


@pytest.mark.parametrize(
    ("header", "expected"),
    [
        (None, "identity"),
        ("", "identity"),
        ("gzip", "gzip"),
        ("gzip, zstd", "zstd"),
        ("gzip;q=1, zstd;q=0.999", "gzip"),
        ("identity;q=1, gzip;q=0.5", "identity"),
        ("*", "zstd"),
        ("*;q=0", None),
        ("*;q=0, identity;q=0.1", "identity"),
        ("br", "br"),  # every coding for every GET (docs/api.md §8): br pages are compressed whole
        ("br, identity;q=0", "br"),
        ("gzip, deflate, br", "gzip"),
        ("compress, identity;q=0", None),
        ("GZIP;Q=0.5", "gzip"),
        ("gzip;q=1.5", "identity"),
        ("gzip;q=0.0000", "identity"),
        ("gzip;foo=bar;q=0.2", "gzip"),
        # A parameter that is not name=value makes its element malformed: ignored.
        ("*;q<2w3E", "identity"),
        ("zstd;q, gzip", "gzip"),
        ("zstd;;q=1", "identity"),
    ],
)
def test_negotiation_table_for_a_composed_page(header: str | None, expected: str | None) -> None:
    assert negotiation.choose(header, PAGE_OFFERS) == expected


def test_tiny_precomputed_body_stays_identity_when_smaller() -> None:
    body = b'["a"]'
    variants = {"identity": body, **compression.precompress(body)}
    offers = [negotiation.Offer(c, 0, lambda v=v: len(v)) for c, v in variants.items()]
    # Named as preferred as the codings, identity competes on size; unnamed it comes last.
    assert negotiation.choose("gzip, br, zstd, identity", offers) == "identity"
    assert negotiation.choose("gzip, br, zstd", offers) != "identity"


def test_publish_names_the_keys_to_purge(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    src, out = tmp_path / "src", tmp_path / "out"
    base = [good("keep", category="k"), good("gone", category="y"), good("moved", category="z")]
    write_jsonl(src / "a.jsonl", [*base, good("ko-1", language="ko", category="k")])
    first = builder.build_report(src, out, jobs=1)
    assert first.purge_keys == [
        *(surrogate_keys.language_key(lang) for lang in LANGUAGES),
        surrogate_keys.SITE_KEY,
    ]
    write_jsonl(
        src / "a.jsonl",
        [
            base[0],
            good("moved", category="w", title="new title"),
            good("new", category="x"),
            good("ko-1", language="ko", category="k"),
        ],
    )
    assert cli.main(["--src", str(src), "--out", str(out), "--purge-keys", "-"]) == 0
    printed = capsys.readouterr().out.splitlines()
    en = {
        surrogate_keys.collection_key("en"),
        *(surrogate_keys.category_key("en", c) for c in ("w", "x", "y", "z")),
        *(surrogate_keys.article_key("en", i) for i in ("gone", "moved", "new")),
        surrogate_keys.SITE_KEY,  # the news sitemap lists the new and moved articles
    }
    assert set(printed[2:]) == en  # nothing of ko, of category k, or of the kept article
    assert printed[1].startswith(f"CDN: purge {len(en)} surrogate key(s)")
    # The keys purged are the keys the changed responses carried.
    client = TestClient(
        create_app(Settings(bundle_dir=out, comments_dsn=f"sqlite:///{tmp_path}/c"))
    )
    for path, query in (
        ("/api/v1/en/articles/moved", None),
        ("/api/v1/en/articles", "category=w"),
        ("/api/v1/en/articles", None),
        ("/api/v1/en/feed.atom", None),
        ("/api/v1/en/feed.rss", "category=w"),
        ("/api/v1/en/feed.json", "category=y"),  # no article left in y: an empty feed
        ("/sitemaps/en.xml", None),
        ("/sitemaps/news.xml", None),
        ("/sitemap.xml", None),
    ):
        carried = client.simulate_get(path, query_string=query).headers["surrogate-key"].split()
        assert set(carried) & en, (path, carried)
    # Feeds and sitemaps of an untouched language or category are not purged.
    for path, query in (("/api/v1/ko/feed.atom", None), ("/api/v1/en/feed.atom", "category=k")):
        carried = client.simulate_get(path, query_string=query).headers["surrogate-key"].split()
        assert not set(carried) & en, (path, carried)
    # A publish that changes nothing purges nothing, the site documents included.
    assert builder.build_report(src, out, jobs=1).purge_keys == []


def test_other_compression_settings_rebuild_from_scratch(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Pieces made with other levels or libraries are never mixed with new ones: strong ETags
    name the codec, and an incremental build still serves what a full one serves."""
    from app.builder import generation

    src, out = tmp_path / "src", tmp_path / "out"
    write_jsonl(src / "a.jsonl", [good("a"), good("b")])
    builder.build(src, out, jobs=1)
    assert builder.build_report(src, out, jobs=1).incremental
    monkeypatch.setattr(compression, "CODEC_ID", "c0ffee")
    monkeypatch.setattr(generation, "CODEC_ID", "c0ffee")
    report = builder.build_report(src, out, jobs=1)
    assert not report.incremental and report.added == 2
    client = TestClient(
        create_app(Settings(bundle_dir=out, comments_dsn=f"sqlite:///{tmp_path}/c"))
    )
    tag = fetch(client, "/api/v1/en/articles/a", None, "gzip").headers["etag"]
    assert tag.endswith('-gzip.c0ffee"')


def test_send_serves_a_precomputed_static_document() -> None:
    """The facility feeds and sitemaps use: precompress at build time, send a Precomputed."""
    import falcon

    from app.delivery import Answer, Precomputed, send
    from app.http_cache import CachePolicy

    body = b"<?xml version='1.0'?><feed>" + b"<entry>news</entry>" * 200 + b"</feed>"
    variants = {"identity": body, **compression.precompress(body)}

    class Feed:
        def on_get(self, req: falcon.Request, resp: falcon.Response) -> None:
            answer = Answer(
                Precomputed(variants),
                '"feed-1"',
                CachePolicy(5).header,
                "lang-en list-en",
                "abc123",
                media_type="application/atom+xml",
            )
            send(req, resp, answer)

        on_head = on_get

    app = falcon.App()
    app.add_route("/feed", Feed())
    client = TestClient(app)
    plain = client.simulate_get("/feed")
    assert plain.content == body and plain.headers["etag"] == '"feed-1"'
    assert plain.headers["content-type"] == "application/atom+xml"
    for coding in CODINGS:
        r = client.simulate_get("/feed", headers={"Accept-Encoding": coding})
        assert r.headers["content-encoding"] == coding
        assert decode_body(coding, r.content) == body
        assert r.headers["etag"] == f'"feed-1-{coding}.abc123"'
        assert r.headers["vary"] == "Accept-Encoding"
        assert r.headers["surrogate-key"] == "lang-en list-en"
        assert r.headers["cache-control"].startswith("public, max-age=5, stale-while")
        again = client.simulate_get(
            "/feed", headers={"Accept-Encoding": coding, "If-None-Match": r.headers["etag"]}
        )
        assert again.status_code == 304
    browser = client.simulate_get("/feed", headers={"Accept-Encoding": "gzip, deflate, br, zstd"})
    smallest = min(CODINGS, key=lambda c: len(variants[c]))
    assert browser.headers["content-encoding"] == smallest
    refused = client.simulate_get("/feed", headers={"Accept-Encoding": "identity;q=0, foo"})
    assert refused.status_code == 406


def test_if_modified_since_reads_the_date_it_sent_by_its_fields() -> None:
    """Last-Modified of an article of the year 50 is not read as 2050 (email.utils takes a
    year under 100 for one of this century)."""
    from app.delivery import not_modified_since

    sent = "Tue, 01 Mar 0050 12:00:00 GMT"
    assert not_modified_since("Mon, 01 Mar 2049 00:00:00 GMT", sent)
    assert not_modified_since("Sun, 06 Nov 1994 08:49:37 GMT", "Sun, 06 Nov 1994 08:49:37 GMT")
    assert not not_modified_since("Sun, 06 Nov 1994 08:49:36 GMT", "Sun, 06 Nov 1994 08:49:37 GMT")
    assert not not_modified_since("not a date", sent)
