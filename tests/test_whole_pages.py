"""Whole-page compression (docs/delivery.md, "Whole pages") and Last-Modified /
If-Modified-Since, through the real app on the hand-written sample corpus.

Oracles: the reference whole-page compressors (zlib -6, zstd -3, brotli 5) on the identity
body, and the Article JSON of each page's items.
"""

from __future__ import annotations

import random
import zlib
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from email.utils import format_datetime, parsedate_to_datetime
from pathlib import Path
from urllib.parse import quote

import brotli
import falcon.testing
import pytest
import zstandard
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from app.builder.builder import build
from app.bundle.language import HEAD_DATED
from app.compression import BR, CODEC_ID, GZIP, ZSTD
from app.config import Settings
from app.languages import LANGUAGES
from app.models import LIMIT_MAX
from app.timestamps import parse_timestamp
from app.whole_pages import WHOLE_CODEC_ID, compress
from app.wsgi import create_app
from tests.helpers import good, write_jsonl
from tests.http_support import decode_body

SAMPLE = Path(__file__).resolve().parent.parent / "data" / "sample"
# The bound: a compressed page within 1.15 x of the whole page compressed by the
# reference compressors at their usual levels.
BOUND = 1.15
REFERENCE = {
    GZIP: lambda b: len(zlib.compress(b, 6)) + 8,  # zlib's 2 + 4 framing vs gzip's 10 + 8
    ZSTD: lambda b: len(zstandard.ZstdCompressor(level=3).compress(b)),
    BR: lambda b: len(brotli.compress(b, quality=5)),
}


@pytest.fixture(scope="module")
def sample(tmp_path_factory: pytest.TempPathFactory) -> Iterator[falcon.testing.TestClient]:
    out = tmp_path_factory.mktemp("sample") / "bundle"
    build(SAMPLE, out)
    tmp = tmp_path_factory.mktemp("comments")
    app = create_app(Settings(bundle_dir=out, comments_dsn=f"sqlite:///{tmp}/c.sqlite3"))
    yield falcon.testing.TestClient(app)


def get(client: falcon.testing.TestClient, path: str, **headers: str) -> falcon.testing.Result:
    return client.simulate_get(path, headers=headers or None)


PAGES = st.one_of(
    st.builds(
        "/api/v1/{}/articles?page_size={}".format, st.sampled_from(LANGUAGES), st.integers(5, 100)
    ),
    st.builds(
        "/api/v1/{}/articles/latest?limit={}".format, st.sampled_from(LANGUAGES), st.integers(5, 50)
    ),
    st.builds(
        "/api/v1/{}/articles/search?q={}&page_size=50".format,
        st.sampled_from(["en", "fr", "de"]),
        st.sampled_from(["the", "la", "die", "percent", "2026"]),
    ),
    st.builds("/sitemaps/{}.xml".format, st.sampled_from(LANGUAGES)),
)


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(path=PAGES, coding=st.sampled_from([GZIP, ZSTD, BR]))
def test_a_repeated_page_is_within_the_bound_of_whole_page_compression(
    sample: falcon.testing.TestClient, path: str, coding: str
) -> None:
    identity = get(sample, path)
    assert identity.status_code == 200
    body = identity.content
    first = get(sample, path, **{"Accept-Encoding": coding})
    second = get(sample, path, **{"Accept-Encoding": coding})
    for r in (first, second):
        assert r.headers["content-encoding"] == coding
        assert decode_body(coding, r.content) == body
    tag = identity.headers["etag"][:-1]
    whole = f'{tag}-{coding}.w{WHOLE_CODEC_ID}"'
    # Whole from the first answer on: one representation per page and coding.
    for r in (first, second):
        assert r.headers["etag"] == whole
        assert r.content == compress(coding, body)
    if len(body) > 2000:  # tiny pages: framing, not text
        assert len(second.content) <= BOUND * REFERENCE[coding](body), (path, coding)


def test_the_first_request_is_whole_and_smaller_than_the_pieces(
    sample: falcon.testing.TestClient,
) -> None:
    path = "/api/v1/ja/articles?page_size=17"
    first = get(sample, path, **{"Accept-Encoding": "gzip, deflate, br, zstd"})
    assert first.headers["content-encoding"] == ZSTD
    assert first.headers["etag"].endswith(f'-zstd.w{WHOLE_CODEC_ID}"')
    # The same page composed from the build's pieces (what a first answer used to be).
    tag = first.headers["etag"]
    again = get(sample, path, **{"Accept-Encoding": "zstd", "If-None-Match": tag})
    assert again.status_code == 304 and again.headers["etag"] == tag
    composed = tag.replace(f".w{WHOLE_CODEC_ID}", f".{CODEC_ID}")
    other = get(sample, path, **{"Accept-Encoding": "zstd", "If-None-Match": composed})
    assert other.status_code == 200 and other.content == first.content


def _updated(item: dict[str, str]) -> datetime:
    return parse_timestamp(item["updated_at"]).replace(microsecond=0)


@pytest.mark.parametrize("language", LANGUAGES)
def test_last_modified_is_the_newest_updated_at(
    sample: falcon.testing.TestClient, language: str
) -> None:
    page = get(sample, f"/api/v1/{language}/articles?page_size=7")
    items = page.json["items"]
    newest = max(_updated(i) for i in items)
    assert parsedate_to_datetime(page.headers["last-modified"]) == newest
    for item in items[:3]:
        one = get(sample, f"/api/v1/{language}/articles/{quote(item['id'], safe='')}")
        assert parsedate_to_datetime(one.headers["last-modified"]) == _updated(item)
    latest = get(sample, f"/api/v1/{language}/articles/latest?limit=7")
    assert latest.headers["last-modified"] == page.headers["last-modified"]  # same articles
    empty = get(sample, f"/api/v1/{language}/articles/search?q=zzqqxxnothing")
    assert empty.status_code == 200 and "last-modified" not in empty.headers


def test_latest_last_modified_at_every_limit(sample: falcon.testing.TestClient) -> None:
    # Worked out per bundle at load (app.bundle.language, HEAD_DATED): each limit's value is
    # still the newest updated_at of the items it sends, past the language's count too.
    assert HEAD_DATED >= LIMIT_MAX
    for language in LANGUAGES:
        for limit in range(1, LIMIT_MAX + 1):
            page = get(sample, f"/api/v1/{language}/articles/latest?limit={limit}")
            # Summaries carry no updated_at: the same articles in full do.
            full = get(sample, f"/api/v1/{language}/articles?page_size={limit}").json["items"]
            assert [i["id"] for i in page.json] == [i["id"] for i in full]
            newest = max(_updated(i) for i in full)
            assert parsedate_to_datetime(page.headers["last-modified"]) == newest, limit


def test_if_modified_since(sample: falcon.testing.TestClient) -> None:
    path = "/api/v1/en/articles/latest?limit=4"
    lm = get(sample, path).headers["last-modified"]
    moment = parsedate_to_datetime(lm)
    later = format_datetime(moment + timedelta(days=1), usegmt=True)
    earlier = format_datetime(moment - timedelta(seconds=1), usegmt=True)
    same = get(sample, path, **{"If-Modified-Since": lm})
    assert same.status_code == 304 and same.content == b""
    assert same.headers["last-modified"] == lm and "etag" in same.headers
    assert get(sample, path, **{"If-Modified-Since": later}).status_code == 304
    assert get(sample, path, **{"If-Modified-Since": earlier}).status_code == 200
    # asctime and RFC 850 forms are HTTP-dates too (RFC 9110, 5.6.7).
    asctime = moment.astimezone(UTC).strftime("%a %b %d %H:%M:%S %Y")
    assert get(sample, path, **{"If-Modified-Since": asctime}).status_code == 304
    for bad in ("yesterday", "", "Mon, 99 Foo 2026 99:99:99 GMT", "x" * 300):
        assert get(sample, path, **{"If-Modified-Since": bad}).status_code == 200
    # If-None-Match wins: a tag that does not match means 200 whatever the date says.
    both = get(sample, path, **{"If-Modified-Since": later, "If-None-Match": '"nope"'})
    assert both.status_code == 200


def test_last_modified_when_updated_at_is_far_from_the_end(tmp_path: Path) -> None:
    """Translations with long ids push `updated_at` over 512 bytes from the record's end:
    the search falls back to the whole record."""
    records = [
        good(
            f"{language}-{'x' * 190}-{n}",
            language=language,
            story_id=f"story-{n}",
            published_at=f"2026-03-0{n + 1}T00:00:00Z",
            updated_at=f"2026-04-0{9 - n}T12:34:56Z",
        )
        for language in LANGUAGES
        for n in range(3)
    ]
    write_jsonl(tmp_path / "src" / "a.jsonl", records)
    build(tmp_path / "src", tmp_path / "out", jobs=1)
    client = falcon.testing.TestClient(
        create_app(Settings(bundle_dir=tmp_path / "out", comments_dsn=f"sqlite:///{tmp_path}/c"))
    )
    page = client.simulate_get("/api/v1/en/articles")
    one = client.simulate_get(f"/api/v1/en/articles/{quote(page.json['items'][0]['id'])}")
    after = one.content.split(b'"updated_at":"', 1)[1]
    assert len(after) > 512  # the translations after it: the fast path misses
    assert one.headers["last-modified"] == "Tue, 07 Apr 2026 12:34:56 GMT"  # its own (n = 2)
    assert parsedate_to_datetime(page.headers["last-modified"]) == datetime(
        2026, 4, 9, 12, 34, 56, tzinfo=UTC
    )


def test_latest_last_modified_when_older_articles_were_updated_later(tmp_path: Path) -> None:
    """Updates in random order, so that the newest update is often further down the list
    than a page reaches: a value worked out at load over one record too many or too few
    differs from the page's own."""
    rng = random.Random(7)
    start = datetime(2026, 1, 1, tzinfo=UTC)
    records = []
    for n in range(70):  # more than LIMIT_MAX: every limit is a full page
        published = start + timedelta(hours=n)
        updated = published + timedelta(days=rng.randrange(0, 90), seconds=rng.randrange(86400))
        records.append(
            good(
                f"en-{n}",
                published_at=format_datetime_z(published),
                updated_at=format_datetime_z(updated),
            )
        )
    write_jsonl(tmp_path / "src" / "en.jsonl", records)
    build(tmp_path / "src", tmp_path / "out", jobs=1)
    client = falcon.testing.TestClient(
        create_app(Settings(bundle_dir=tmp_path / "out", comments_dsn=f"sqlite:///{tmp_path}/c"))
    )
    full = client.simulate_get("/api/v1/en/articles?page_size=100").json["items"]
    for limit in range(1, LIMIT_MAX + 1):
        latest = client.simulate_get(f"/api/v1/en/articles/latest?limit={limit}")
        newest = max(_updated(item) for item in full[:limit])
        assert parsedate_to_datetime(latest.headers["last-modified"]) == newest, limit


def format_datetime_z(moment: datetime) -> str:
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")
