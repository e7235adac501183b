"""Feeds and sitemaps against schemas, not only parsers (docs/delivery.md): xmllint (Debian's
libxml2-utils) validates every Atom feed with RELAX NG (RFC 4287, Appendix B), every RSS
feed with RELAX NG (RSS 2.0), and every sitemap, the index and the news sitemap with the
sitemaps.org and Google News XSDs (tests/schemas/, docs/delivery.md "Validation").

Documents come from the real app on the hand-written sample and on hostile text. Each
schema is also shown a document it must refuse, so a schema that accepts everything fails.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import quote

import falcon.testing
import pytest

from app.builder import builder
from app.config import Settings
from app.languages import LANGUAGES
from app.resources import feeds
from app.wsgi import create_app
from tests.helpers import good, write_jsonl

SCHEMAS = Path(__file__).resolve().parent / "schemas"
SAMPLE = Path(__file__).resolve().parent.parent / "data" / "sample"
ATOM, RSS, SITEMAPS = SCHEMAS / "atom.rng", SCHEMAS / "rss.rng", SCHEMAS / "sitemaps.xsd"
NASTY = "ctl\x01 <b>&amp;</b> \"q\" 'a' \r\n cr\r \U0001f600 ]]> &#0; <script>x</script>"


def xmllint(schema: Path, document: bytes) -> tuple[bool, str]:
    option = "--relaxng" if schema.suffix == ".rng" else "--schema"
    done = subprocess.run(
        ["xmllint", "--noout", "--nonet", option, str(schema), "-"],
        input=document,
        capture_output=True,
        timeout=60,
        check=False,
    )
    return done.returncode == 0, done.stderr.decode("utf-8", "replace")[-2000:]


@pytest.fixture(scope="module", autouse=True)
def need_xmllint() -> None:
    if shutil.which("xmllint") is None:
        message = "xmllint is not installed (apt-get install libxml2-utils)"
        if os.environ.get("CI"):
            pytest.fail(f"{message} (CI is set, so this is a failure)")
        pytest.skip(message)


def _client(src: Path, tmp: Path) -> falcon.testing.TestClient:
    out = tmp / "bundle"
    builder.build(src, out, jobs=1)
    return falcon.testing.TestClient(
        create_app(Settings(bundle_dir=out, comments_dsn=f"sqlite:///{tmp}/c.sqlite3"))
    )


@pytest.fixture(scope="module", params=["sample", "hostile"])
def client(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[falcon.testing.TestClient]:
    tmp = tmp_path_factory.mktemp(request.param)
    if request.param == "sample":
        src = SAMPLE
    else:
        src = tmp / "src"
        records = [
            good(
                f'{language}-{i} <&> "%20 é',
                language=language,
                title=f"T{i} {NASTY}",
                summary=f"S {NASTY}",
                content=f"C {NASTY}",
                category=f"cat {i % 2} {NASTY[:8]}",
                author=f"A {NASTY}",
                story_id=f"story-{i}",
                published_at=f"2026-11-2{i}T10:00:00Z",
            )
            for language in LANGUAGES
            for i in range(3)
        ]
        write_jsonl(src / "a.jsonl", records)
    yield _client(src, tmp)


@pytest.fixture(autouse=True)
def window(monkeypatch: pytest.MonkeyPatch) -> None:
    # A clock a day after the sample's newest article: the news sitemap is not empty.
    monkeypatch.setattr(feeds, "clock", lambda: 1795000000.0)  # 2026-11-18T08:26:40Z


def _get(client: falcon.testing.TestClient, path: str, query: str | None = None) -> bytes:
    result = client.simulate_get(path, query_string=query)
    assert result.status_code == 200, (path, query)
    return result.content


def test_every_feed_validates(client: falcon.testing.TestClient) -> None:
    checked = 0
    for language in LANGUAGES:
        categories = client.simulate_get(f"/api/v1/{language}/categories").json
        for category in [None, *categories[:3], "no such category"]:
            query = None if category is None else f"category={quote(category)}"
            for kind, schema in (("atom", ATOM), ("rss", RSS)):
                body = _get(client, f"/api/v1/{language}/feed.{kind}", query)
                ok, errors = xmllint(schema, body)
                assert ok, (language, category, kind, errors)
                checked += 1
    assert checked >= 9 * 2 * 2


def test_every_sitemap_validates(client: falcon.testing.TestClient) -> None:
    documents = ["/sitemap.xml", "/sitemaps/news.xml"]
    documents += [f"/sitemaps/{language}.xml" for language in LANGUAGES]
    for path in documents:
        body = _get(client, path)
        if b"<url>" not in body and b"<sitemap>" not in body:
            continue  # the XSD requires at least one entry; an empty urlset is still served
        ok, errors = xmllint(SITEMAPS, body)
        assert ok, (path, errors)
    news = _get(client, "/sitemaps/news.xml")
    assert news.count(b"<url>") >= 1


def test_the_schemas_refuse_what_they_must(client: falcon.testing.TestClient) -> None:
    news = _get(client, "/sitemaps/news.xml")
    assert news.count(b"<news:language>")
    # Google's pattern is zh-cn|zh-tw|([a-z]{2,3}): the BCP 47 forms fail it.
    for bad in (b"zh-TW", b"zh-CN", b"en-GB"):
        tampered = news.replace(b"<news:language>", b"<news:language>" + bad + b"x", 1)
        assert not xmllint(SITEMAPS, tampered)[0]
    sitemap = _get(client, "/sitemaps/en.xml")
    assert not xmllint(SITEMAPS, sitemap.replace(b"<lastmod>", b"<lastmod>soon", 1))[0]
    assert not xmllint(SITEMAPS, sitemap.replace(b'rel="alternate"', b'rel="next"', 1))[0]
    atom = _get(client, "/api/v1/en/feed.atom")
    assert not xmllint(ATOM, atom.replace(b"<updated>", b"<updated>x", 1))[0]
    assert not xmllint(ATOM, atom.replace(b"<title>", b"<titel>", 1))[0]
    rss = _get(client, "/api/v1/en/feed.rss")
    assert not xmllint(RSS, rss.replace(b"<pubDate>", b"<pubDate>2026-", 1))[0]
    assert not xmllint(RSS, rss.replace(b"<link>", b"<lnk>", 1))[0]


def test_atom_entries_without_content_have_an_alternate_link(
    client: falcon.testing.TestClient,
) -> None:
    """RFC 4287's Schematron rule that RELAX NG cannot say (4.1.1.1 / 4.1.2): every entry
    here has content, and an alternate link as well."""
    import xml.etree.ElementTree as ET

    ns = {"a": "http://www.w3.org/2005/Atom"}
    for language in LANGUAGES:
        root = ET.fromstring(_get(client, f"/api/v1/{language}/feed.atom"))
        for entry in root.findall("a:entry", ns):
            rels = [link.get("rel", "alternate") for link in entry.findall("a:link", ns)]
            assert "alternate" in rels and entry.find("a:content", ns) is not None
