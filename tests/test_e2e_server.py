"""End to end: real builder, real gunicorn (and granian) on a free loopback port, stdlib client.

Swaps in a new bundle while threads send requests: no request may fail, the new article
must become visible, and SIGTERM must stop the server cleanly.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from app.build.cli import build
from app.config import PROJECT_ROOT
from tests.helpers import (
    JA_ID,
    KO_ID,
    article_path,
    corpus_records,
    expected_article,
    expected_order,
    good,
    write_corpus,
)
from tests.http_support import Response, exchange, free_port

pytestmark = pytest.mark.e2e

GUNICORN = Path(sys.executable).parent / "gunicorn"
GRANIAN = Path(sys.executable).parent / "granian"
CONF = PROJECT_ROOT / "app" / "gunicorn_conf.py"
START_TIMEOUT = 15.0
STOP_TIMEOUT = 10.0


@dataclass
class Server:
    port: int
    process: subprocess.Popen[bytes]
    bundle_dir: Path
    src: Path
    log: Path

    def request(
        self, method: str, path: str, headers: dict[str, str] | None = None, timeout: float = 5
    ) -> Response:
        return exchange(self.port, method, path, headers=headers, timeout=timeout)

    def get(self, path: str, headers: dict[str, str] | None = None) -> Response:
        return self.request("GET", path, headers)


def server_command(kind: str, port: int) -> list[str]:
    """gunicorn (the default) or granian, as `make serve SERVER=...` runs them."""
    if kind == "granian":
        return [
            str(GRANIAN), "--interface", "wsgi", "--blocking-threads", "1", "--backpressure", "32",
            "--respawn-failed-workers", "--host", "127.0.0.1", "--port", str(port),
            "--workers", "2", "app.wsgi:app",
        ]  # fmt: skip
    return [str(GUNICORN), "-c", str(CONF), "app.wsgi:app"]


def start_server(
    tmp: Path, bundle_dir: Path, port: int, check_interval: str = "0.2", kind: str = "gunicorn"
) -> tuple[subprocess.Popen[bytes], Path]:
    env = {
        **os.environ,
        "NEWS_BIND": f"127.0.0.1:{port}",
        "NEWS_BUNDLE_DIR": str(bundle_dir),
        "NEWS_COMMENTS_DSN": f"sqlite:///{tmp}/comments.sqlite3",
        "NEWS_BUNDLE_CHECK_INTERVAL": check_interval,
        "NEWS_CACHE_MAX_AGE": "77",
        "WEB_CONCURRENCY": "2",
    }
    log = tmp / f"{kind}.log"
    with open(log, "wb") as fh:
        process = subprocess.Popen(
            server_command(kind, port),
            cwd=PROJECT_ROOT,
            env=env,
            stdout=fh,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    return process, log


def wait_healthy(srv: Server) -> None:
    """Until /health answers 200; fails with the server's log if it exits or takes too long."""
    deadline = time.monotonic() + START_TIMEOUT
    while True:
        assert srv.process.poll() is None, srv.log.read_text(errors="replace")
        try:
            if srv.get("/health").status == 200:
                return
        except OSError:
            pass
        assert time.monotonic() < deadline, "server did not start: " + srv.log.read_text()
        time.sleep(0.1)


def stop(process: subprocess.Popen[bytes]) -> None:
    """Kill the server and its workers (its own process group, started by us)."""
    if process.poll() is None:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait(timeout=STOP_TIMEOUT)


@pytest.fixture(scope="module", params=["gunicorn", "granian"])
def server(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Server]:
    tmp = tmp_path_factory.mktemp(f"e2e-{request.param}")
    src = tmp / "src"
    write_corpus(src, corpus_records())
    bundle_dir = tmp / "bundle"
    build(src, bundle_dir)
    port = free_port()
    process, log = start_server(tmp, bundle_dir, port, kind=request.param)
    srv = Server(port, process, bundle_dir, src, log)
    try:
        wait_healthy(srv)
        yield srv
    finally:
        stop(process)


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
    assert listing.headers["cache-control"] == "public, max-age=77"
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
        assert got.json() == expected_article(record)
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
    server.process.send_signal(signal.SIGTERM)
    assert server.process.wait(timeout=STOP_TIMEOUT) == 0
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
    process, log = start_server(tmp_path, bundle_dir, free_port())
    try:
        assert process.wait(timeout=START_TIMEOUT) != 0
    finally:
        stop(process)
    output = log.read_text(errors="replace")
    assert "cannot start" in output and "format version 999" in output


def test_sighup_picks_up_new_bundle(tmp_path: Path) -> None:
    """With a long check interval, `kill -HUP` is how an operator switches bundles."""
    bundle_dir = tmp_path / "bundle"
    src = tmp_path / "src"
    write_corpus(src, [good("first")])
    build(src, bundle_dir)
    port = free_port()
    process, log = start_server(tmp_path, bundle_dir, port, check_interval="3600")
    srv = Server(port, process, bundle_dir, src, log)
    try:
        wait_healthy(srv)
        write_corpus(src, [good("first"), good("second")])
        new_id = build(src, bundle_dir)
        process.send_signal(signal.SIGHUP)
        deadline = time.monotonic() + 10
        streak = 0
        while streak < 20:
            assert time.monotonic() < deadline, log.read_text(errors="replace")
            try:
                ok = srv.get("/ready").json()["bundle"] == new_id
            except OSError:
                ok = False
            streak = streak + 1 if ok else 0
            time.sleep(0.02)
        assert srv.get(article_path("en", "second")).status == 200
    finally:
        stop(process)
