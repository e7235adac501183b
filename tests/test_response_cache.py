"""Answers that repeat (app/response_cache.py, on app/bounded.py): the same bytes as the whole
way, bounded, kept as the route declares, and never across bundles or the clock.

Oracle: the same app without the cache (NEWS_RESPONSE_CACHE_BYTES=0), sent the same request
sequence; every status, header and body must be identical.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import falcon
import falcon.testing
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from app.bounded import Bounded
from app.builder.builder import build
from app.config import Settings
from app.languages import LANGUAGES
from app.response_cache import App, ResponseCache
from app.wsgi import create_app
from tests.helpers import article_path, good, write_jsonl

SAMPLE = Path(__file__).resolve().parent.parent / "data" / "sample"


def _client(bundle: Path, tmp: Path, cache_bytes: int) -> falcon.testing.TestClient:
    settings = Settings(
        bundle_dir=bundle,
        comments_dsn=f"sqlite:///{tmp}/c-{cache_bytes}.sqlite3",
        response_cache_bytes=cache_bytes,
    )
    return falcon.testing.TestClient(create_app(settings))


@pytest.fixture(scope="module")
def pair(
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[tuple[falcon.testing.TestClient, falcon.testing.TestClient, list[str]]]:
    out = tmp_path_factory.mktemp("sample") / "bundle"
    build(SAMPLE, out)
    tmp = tmp_path_factory.mktemp("comments")
    plain = _client(out, tmp, 0)
    cached = _client(out, tmp, 1 << 20)
    ids = [
        article_path(language, item["id"])
        for language in LANGUAGES
        for item in plain.simulate_get(f"/api/v1/{language}/articles?page_size=100").json["items"]
    ]
    yield plain, cached, ids


def _targets(ids: list[str]) -> st.SearchStrategy[str]:
    language = st.sampled_from(LANGUAGES)
    return st.one_of(
        st.sampled_from(ids),
        st.sampled_from([*ids, "/api/v1/en/articles/en-2026-11-fusion-plant-grid"]),
        st.builds(
            "/api/v1/{}/articles?page={}&page_size={}".format,
            language,
            st.integers(1, 3),
            st.integers(1, 8),
        ),
        st.builds("/api/v1/{}/articles/latest?limit={}".format, language, st.integers(1, 12)),
        st.builds("/api/v1/{}/categories".format, language),
        st.builds("/api/v1/{}/corrections".format, language),
        st.builds(
            "/api/v1/{}/articles/search?q={}".format,
            language,
            st.sampled_from(["economy", "%EA%B2%BD%EC%A0%9C", "the", "a+OR+b", "x"]),
        ),
        st.builds("/api/v1/{}/feed.{}".format, language, st.sampled_from(["atom", "rss", "json"])),
        st.sampled_from(["/sitemap.xml", "/sitemaps/en.xml", "/sitemaps/news.xml", "/health"]),
        st.sampled_from(["/api/v1/xx/articles", "/api/v1/en/articles?page=0", "/nowhere"]),
    )


HEADERS = st.fixed_dictionaries(
    {},
    optional={
        "Accept-Encoding": st.sampled_from(["gzip", "br", "zstd", "gzip, br", "identity;q=0"]),
        "If-None-Match": st.sampled_from(['"nope"', "*"]),
    },
)


def _answer(result: falcon.testing.Result) -> tuple[Any, ...]:
    return result.status, sorted(result.headers.items()), result.content


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_cached_answers_are_the_answers_of_the_whole_way(
    pair: tuple[falcon.testing.TestClient, falcon.testing.TestClient, list[str]],
    data: st.DataObject,
) -> None:
    plain, cached, ids = pair
    requests = data.draw(
        st.lists(
            st.tuples(st.sampled_from(["GET", "HEAD"]), _targets(ids), HEADERS),
            min_size=1,
            max_size=12,
        )
    )
    # Each request twice or more: the second is the one a cache would answer.
    for method, target, headers in requests + requests + requests[:3]:
        path, _, query = target.partition("?")
        want = plain.simulate_request(method, path, query_string=query, headers=headers)
        got = cached.simulate_request(method, path, query_string=query, headers=headers)
        assert _answer(got) == _answer(want), (method, target, headers)


def test_a_conditional_request_goes_the_whole_way(
    pair: tuple[falcon.testing.TestClient, falcon.testing.TestClient, list[str]],
) -> None:
    _, cached, ids = pair
    target = ids[-1]
    first = [cached.simulate_get(target, headers={"Accept-Encoding": "gzip"}) for _ in range(3)]
    assert _answer(first[1]) == _answer(first[2])
    etag = first[2].headers["etag"]
    revalidated = cached.simulate_get(
        target, headers={"Accept-Encoding": "gzip", "If-None-Match": etag}
    )
    assert revalidated.status_code == 304 and revalidated.content == b""
    since = cached.simulate_get(
        target, headers={"If-Modified-Since": first[2].headers["last-modified"]}
    )
    assert since.status_code == 304


def test_a_new_bundle_is_never_answered_from_the_old_one(tmp_path: Path) -> None:
    src, served = tmp_path / "src", tmp_path / "served"
    write_jsonl(src / "a.jsonl", [good("one", title="Before")])
    build(src, served)
    settings = Settings(
        bundle_dir=served,
        comments_dsn=f"sqlite:///{tmp_path}/c.sqlite3",
        bundle_check_interval=0.05,
    )
    client = falcon.testing.TestClient(create_app(settings))
    path = article_path("en", "one")
    for _ in range(3):
        assert client.simulate_get(path).json["title"] == "Before"
    write_jsonl(src / "a.jsonl", [good("one", title="After")])
    build(src, served)
    deadline = time.monotonic() + 10
    titles = []
    while time.monotonic() < deadline:
        titles.append(client.simulate_get(path).json["title"])
        if titles[-1] == "After":
            break
        time.sleep(0.02)
    # Once the new bundle is served, never the old answer again.
    assert titles[-1] == "After"
    assert all(client.simulate_get(path).json["title"] == "After" for _ in range(5))


class _Fixed:
    """An answer `size` bytes long; counts the requests that reach it."""

    def __init__(self) -> None:
        self.calls = 0

    def on_get(self, req: falcon.Request, resp: falcon.Response, size: int) -> None:
        self.calls += 1
        resp.data = b"x" * size
        resp.set_header("ETag", f'"{size}"')
        if size == 404:
            raise falcon.HTTPNotFound()

    on_head = on_get


class _Store:
    def __init__(self) -> None:
        self.bundle = object()

    def current(self) -> Any:
        return self.bundle


def _fixed_app(cache: ResponseCache, keep: bool = True) -> tuple[falcon.testing.TestClient, _Fixed]:
    app = App(cache)
    fixed = _Fixed()
    app.add_route("/fixed/{size:int}", fixed)
    app.keep_answers(fixed, keep)
    return falcon.testing.TestClient(app), fixed


def test_the_cache_stays_within_its_bounds() -> None:
    store = _Store()
    cache = ResponseCache(store, max_bytes=16_000, max_entries=8)  # type: ignore[arg-type]
    client, fixed = _fixed_app(cache)
    sizes = [100, 900, 1000, 999, 50, 1000, 2000, 10, 20, 30, 40, 1000, 100, 900]
    for size in sizes * 3:
        result = client.simulate_get(f"/fixed/{size}")
        assert result.content == b"x" * size and result.headers["etag"] == f'"{size}"'
        assert cache.size <= 16_000 and len(cache) <= 8
    # A body over a sixteenth of the budget is never kept: every request reaches it.
    before = fixed.calls
    for _ in range(3):
        client.simulate_get("/fixed/1001")
    assert fixed.calls == before + 3
    # Kept from its second answer on, then answered without the resource, until the bundle
    # object changes.
    client.simulate_get("/fixed/7")
    client.simulate_get("/fixed/7")
    assert cache.size >= 7
    before = fixed.calls
    client.simulate_get("/fixed/7")
    for _ in range(3):
        client.simulate_head("/fixed/7")
    assert fixed.calls == before + 2  # the HEAD is its own answer, kept as well
    store.bundle = object()
    client.simulate_get("/fixed/7")
    assert fixed.calls == before + 3
    # Least recently used out first: an answer asked again outlives those asked since.
    for size in (1, 2, 3, 4, 5, 6, 7, 8, 1, 2, 3, 4, 5, 6, 7, 8):
        client.simulate_get(f"/fixed/{size}")
    client.simulate_get("/fixed/1")
    for _ in range(2):
        client.simulate_get("/fixed/9")  # kept: evicts 2, the least recently used
    before = fixed.calls
    client.simulate_get("/fixed/1")
    assert fixed.calls == before
    client.simulate_get("/fixed/2")
    assert fixed.calls == before + 1


def test_answers_seen_once_are_bounded() -> None:
    cache = ResponseCache(_Store(), max_bytes=16_000, max_entries=2)  # type: ignore[arg-type]
    client, _ = _fixed_app(cache)
    for size in range(1, 30):
        client.simulate_get(f"/fixed/{size}")
        assert len(cache._seen) <= 8 and len(cache) == 0


def test_only_what_the_route_declares_is_kept() -> None:
    store = _Store()
    for keep in (True, False):
        cache = ResponseCache(store, max_bytes=16_000)  # type: ignore[arg-type]
        client, fixed = _fixed_app(cache, keep)
        for _ in range(3):
            client.simulate_get("/fixed/5")
            client.simulate_get("/fixed/404")  # an error is never kept
        assert fixed.calls == (5 if keep else 6)  # kept from the second answer
        assert len(cache) == (1 if keep else 0)


def test_the_sitemap_route_keeps_the_language_pages_not_the_news() -> None:
    from app.routes import ROUTES

    (sitemaps,) = [route for route in ROUTES if route.path == "/sitemaps/{sitemap}.xml"]
    rule = sitemaps.keeps
    assert callable(rule) and rule({"sitemap": "en"}) and not rule({"sitemap": "news"})
    kept = {route.path for route in ROUTES if route.keeps is not False}
    assert kept == {route.path for route in ROUTES if route.cache == "public"}


def test_the_block_is_bounded_least_recently_used_first() -> None:
    block: Bounded[str, bytes] = Bounded(max_bytes=4000, max_entries=100, share=4)
    for i in range(20):
        assert block.put(f"k{i}", b"x" * 500, 500)
        assert block.size <= 4000 and len(block) <= 8
    assert block.get("k12") is not None  # the oldest still kept: now the most recent
    block.put("new", b"y" * 500, 500)
    assert "k12" in block and "k13" not in block
    assert not block.put("big", b"z" * 1001, 1001)  # over a quarter of the budget
    assert "big" not in block
    block.clear()
    assert block.size == 0 and len(block) == 0


def test_the_news_sitemap_follows_the_clock(
    pair: tuple[falcon.testing.TestClient, falcon.testing.TestClient, list[str]],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from app.resources import feeds

    _, cached, _ = pair
    monkeypatch.setattr(feeds, "clock", lambda: 0.0)  # 1970: every entry is in the future
    early = [cached.simulate_get("/sitemaps/news.xml").content for _ in range(2)]
    monkeypatch.setattr(feeds, "clock", lambda: 4e9)  # 2096: every entry has aged out
    late = cached.simulate_get("/sitemaps/news.xml").content
    assert early[0] == early[1] and b"<url>" in early[0]
    assert b"<url>" not in late
