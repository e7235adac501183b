"""End to end: real builder, real gunicorn (and granian) on a free loopback port, stdlib client.

Swaps in a new bundle while threads send requests: no request may fail, the new article
must become visible, and SIGTERM must stop the server cleanly.
"""

from __future__ import annotations

import json
import re
import signal
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from app.builder.builder import build
from tests.helpers import (
    JA_ID,
    KO_ID,
    SUMMARY_FIELDS,
    article_path,
    corpus_records,
    expected_article,
    expected_order,
    good,
    write_corpus,
)
from tests.server import Kind, Server

pytestmark = pytest.mark.e2e

STOP_TIMEOUT = 10.0
FAILED_START_TIMEOUT = 15.0  # a refused bundle must end the start-up this soon


def e2e_server(
    tmp: Path, bundle_dir: Path, kind: Kind = "gunicorn", check_interval: str = "0.2"
) -> Server:
    return Server(
        tmp,
        bundle_dir,
        kind=kind,
        env={"NEWS_BUNDLE_CHECK_INTERVAL": check_interval, "NEWS_CACHE_MAX_AGE": "77"},
        request_timeout=5.0,  # under the swap load, a slower answer is a failed request
    )


@pytest.fixture(scope="module", params=["gunicorn", "granian"])
def server(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Server]:
    tmp = tmp_path_factory.mktemp(f"e2e-{request.param}")
    src = tmp / "src"
    write_corpus(src, corpus_records())
    bundle_dir = tmp / "bundle"
    build(src, bundle_dir)
    srv = e2e_server(tmp, bundle_dir, request.param)
    try:
        yield srv.start()
    finally:
        srv.kill()


def test_every_operation(server: Server) -> None:
    records = corpus_records()
    assert server.get("/health").json() == {"status": "ok"}
    ready = server.get("/ready")
    assert ready.status == 200 and ready.json()["status"] == "ready"
    manifest = json.loads((server.bundle_dir / "manifest.json").read_bytes())
    assert ready.json()["bundle"] == manifest["bundle_id"]
    assert server.get("/openapi.json").json()["openapi"].startswith("3.1")

    listing = server.get("/api/v1/en/articles?page=2&page_size=5")
    assert listing.status == 200
    assert listing.headers["content-type"].startswith("application/json")
    assert listing.headers["cache-control"] == (
        "public, max-age=77, stale-while-revalidate=60, stale-if-error=86400"
    )
    assert listing.headers["x-content-type-options"] == "nosniff"
    assert listing.json()["items"] == expected_order(records, "en")[5:10]

    latest = server.get("/api/v1/ko/articles/latest?limit=2").json()
    assert [a["id"] for a in latest] == [a["id"] for a in expected_order(records, "ko")[:2]]

    search = server.get("/api/v1/en/articles/search?q=title")
    assert search.status == 200 and search.json()["total"] > 0

    cats = server.get("/api/v1/ko/categories")
    assert cats.json() == ["IT", "경제", "정치"]
    assert "경제".encode() in cats.body and b"\\u" not in cats.body

    for language, article_id in (
        ("ko", KO_ID),
        ("ja", JA_ID),
        ("en", "hello world"),
        ("en", "100%"),
        ("en", "latest-news"),
        ("en", "12345"),
    ):
        got = server.get(article_path(language, article_id))
        assert got.status == 200, (article_id, got.body)
        (record,) = [r for r in records if r["language"] == language and r["id"] == article_id]
        assert got.json() == expected_article(record, records)
        assert article_id.encode() in got.body

    item = server.get(article_path("ko", KO_ID))
    cached = server.get(article_path("ko", KO_ID), {"If-None-Match": item.headers["etag"]})
    assert cached.status == 304 and cached.body == b""
    head = server.request("HEAD", "/api/v1/en/articles")
    assert head.status == 200 and head.body == b"" and head.headers["etag"]

    assert server.get("/api/v1/xx/articles?page=0").json() == {"detail": "Unsupported language: xx"}
    assert server.get(article_path("en", KO_ID)).json() == {"detail": "Article not found"}
    bad = server.get("/api/v1/en/articles?page=abc")
    assert bad.status == 422 and bad.json()["detail"][0]["loc"] == ["query", "page"]
    huge = server.get("/api/v1/en/articles?page=99999999999999999999")
    assert huge.status == 200 and huge.json()["items"] == []
    wrong = server.request("DELETE", "/api/v1/en/articles")
    assert wrong.status == 405 and "GET" in wrong.headers["allow"]
    assert isinstance(wrong.json()["detail"], str)
    missing = server.get("/no/such/path")
    assert missing.status == 404 and missing.json() == {"detail": "Not Found"}


def test_query_features(server: Server) -> None:
    """docs/api.md §7 through the real server: dates, order, fields, facets, highlights,
    Link."""
    records = corpus_records()
    window = "from=2026-02-28T19:00:00-05:00&to=2026-03-01"
    oldest = server.get(f"/api/v1/en/articles?{window}&order=oldest&fields=summary&page_size=2")
    assert oldest.status == 200
    assert [a["id"] for a in oldest.json()["items"]] == ["tie-a", "tie-b"]
    assert set(oldest.json()["items"][0]) == set(SUMMARY_FIELDS)
    links = dict(
        (rel, url) for url, rel in re.findall(r'<([^>]*)>; rel="(\w+)"', oldest.headers["link"])
    )
    assert set(links) == {"first", "next", "last"}
    following = server.get(links["next"])
    assert [a["id"] for a in following.json()["items"]] == ["tie-c"]
    search = server.get("/api/v1/en/articles/search?q=paragraph&category=economy&order=newest")
    body = search.json()
    assert body["total"] == body["facets"]["category"]["economy"]
    assert (
        body["items"] == [a for a in expected_order(records, "en", "economy")][: len(body["items"])]
    )
    marked = server.get("/api/v1/en/articles/search?q=paragraph&highlight=true&page_size=3")
    highlights = marked.json()["highlights"]
    assert [h["id"] for h in highlights] == [a["id"] for a in marked.json()["items"]]
    assert all("<mark>paragraph</mark>" in h["snippet"].lower() for h in highlights)
    bad = server.get("/api/v1/en/articles/search?q=x&from=2026-02-01&to=2026-01-01")
    assert bad.status == 422 and bad.json()["detail"][0]["loc"] == ["query", "to"]


def test_swap_bundle_under_load(server: Server, tmp_path: Path) -> None:
    paths = [
        "/api/v1/en/articles",
        "/api/v1/en/articles?page=2&page_size=7&category=politics",
        "/api/v1/ko/articles/latest",
        article_path("ko", KO_ID),
        article_path("en", "hello world"),
        "/api/v1/ja/categories",
        "/api/v1/en/articles/search?q=title",
        "/ready",
    ]
    failures: list[str] = []
    counts = [0]
    lock = threading.Lock()
    stop_event = threading.Event()

    def hammer(offset: int) -> None:
        n = offset
        while not stop_event.is_set():
            path = paths[n % len(paths)]
            n += 1
            try:
                resp = server.get(path)
                resp.json()
                ok = resp.status == 200
            except Exception as exc:  # any transport error is a failed request
                ok, resp = False, None
                detail = repr(exc)
            else:
                detail = f"{resp.status} {resp.body[:200]!r}"
            with lock:
                counts[0] += 1
                if not ok:
                    failures.append(f"{path}: {detail}")

    threads = [threading.Thread(target=hammer, args=(i,)) for i in range(6)]
    for t in threads:
        t.start()
    try:
        time.sleep(1.0)
        old_ready = server.get("/ready").json()["bundle"]
        # Rebuild the same corpus plus one article into the served directory.
        src = tmp_path / "src2"
        write_corpus(
            src,
            [
                *corpus_records(),
                good("brand-new", language="en", published_at="2027-01-01T00:00:00Z"),
            ],
        )
        new_id = build(src, server.bundle_dir)
        assert new_id != old_ready
        # Every worker must pick it up: require many consecutive hits.
        deadline = time.monotonic() + 10
        streak = 0
        while streak < 20:
            assert time.monotonic() < deadline, "new article never became visible everywhere"
            resp = server.get(article_path("en", "brand-new"))
            streak = streak + 1 if resp.status == 200 else 0
            time.sleep(0.02)
        assert server.get("/ready").json()["bundle"] == new_id
        first = server.get("/api/v1/en/articles?page_size=1").json()["items"][0]
        assert first["id"] == "brand-new"
        time.sleep(1.0)  # keep the load on after the switch
    finally:
        stop_event.set()
        for t in threads:
            t.join(timeout=10)
    assert failures == []
    assert counts[0] > 100  # the load was real


def test_sigterm_exits_cleanly(server: Server) -> None:
    # Runs last in this module (file order): stops the module's server.
    assert server.stop(signal.SIGTERM, timeout=STOP_TIMEOUT) == 0
    with pytest.raises(OSError):
        server.get("/health")


def test_start_with_broken_bundle_exits_with_message(tmp_path: Path) -> None:
    bundle_dir = tmp_path / "bundle"
    src = tmp_path / "src"
    write_corpus(src, [good("x")])
    build(src, bundle_dir)
    manifest = json.loads((bundle_dir / "manifest.json").read_bytes())
    manifest["format_version"] = 999
    (bundle_dir / "manifest.json").write_text(json.dumps(manifest))
    srv = e2e_server(tmp_path, bundle_dir).launch()
    try:
        assert srv.wait(FAILED_START_TIMEOUT) != 0
    finally:
        srv.kill()
    output = srv.log_text()
    assert "cannot start" in output and "format version 999" in output


# granian replaces its workers one at a time, each old one stopping `--respawn-interval`
# (3.5 s; GRANIAN_OPTS keep the default) after its successor starts: 7 s more for two.
@pytest.mark.parametrize(
    ("kind", "switch_timeout"), [("gunicorn", 10.0), ("granian", 17.0)], ids=["gunicorn", "granian"]
)
def test_sighup_picks_up_new_bundle(tmp_path: Path, kind: Kind, switch_timeout: float) -> None:
    """With a long check interval, `kill -HUP` is how an operator switches bundles."""
    bundle_dir = tmp_path / "bundle"
    src = tmp_path / "src"
    write_corpus(src, [good("first")])
    old_id = build(src, bundle_dir)
    srv = e2e_server(tmp_path, bundle_dir, kind, check_interval="3600")
    srv.workers = 1  # every request below reaches the same, already loaded worker
    try:
        srv.start()
        assert srv.get("/ready").json()["bundle"] == old_id  # loaded; next check in an hour
        write_corpus(src, [good("first"), good("second")])
        new_id = build(src, bundle_dir)
        for _ in range(20):  # without the signal the worker keeps serving the old bundle
            assert srv.get("/ready").json()["bundle"] == old_id
        assert srv.get(article_path("en", "second")).status == 404
        srv.send_signal(signal.SIGHUP)
        deadline = time.monotonic() + switch_timeout
        streak = 0
        while streak < 20:
            assert time.monotonic() < deadline, srv.log_text()
            try:
                ok = srv.get("/ready").json()["bundle"] == new_id
            except OSError:
                ok = False
            streak = streak + 1 if ok else 0
            time.sleep(0.02)
        assert srv.get(article_path("en", "second")).status == 200
    finally:
        srv.kill()
