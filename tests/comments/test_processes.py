"""Comments through real gunicorn servers: shared PostgreSQL, SIGKILL, store outage.

Each server is `gunicorn -c app/gunicorn_conf.py app.wsgi:app` in its own process group
(so SIGKILL reaches master and workers), serving a bundle built by the real builder.
"""

from __future__ import annotations

import contextlib
import http.client
import json
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pytest

from tests.comments.support import ADMIN_TOKEN, pg_dsn, public
from tests.server import Server

pytestmark = pytest.mark.e2e

PROJECT = Path(__file__).resolve().parents[2]
KO_ID = "경제-e2e"
ARTICLE = "/api/v1/en/articles/e2e-1"
COMMENTS = ARTICLE + "/comments"


@pytest.fixture(scope="module")
def bundle_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    if not (PROJECT / "app" / "wsgi.py").exists():
        pytest.skip("app/wsgi.py is not there yet")
    tmp = tmp_path_factory.mktemp("bundle")
    src = tmp / "src"
    src.mkdir()
    records = [
        {
            "id": "e2e-1",
            "language": "en",
            "title": "Title",
            "summary": "Summary.",
            "content": "Body.",
            "category": "world",
            "published_at": "2026-01-02T03:04:05+09:00",
        },
        {
            "id": KO_ID,
            "language": "ko",
            "title": "제목",
            "summary": "요약.",
            "content": "본문.",
            "category": "경제",
            "published_at": "2026-01-02T03:04:05+09:00",
        },
    ]
    (src / "articles.jsonl").write_text(
        "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records), encoding="utf-8"
    )
    out = tmp / "bundle"
    subprocess.run(
        [sys.executable, "scripts/build_bundles.py", "--src", str(src), "--out", str(out)],
        cwd=PROJECT,
        check=True,
        capture_output=True,
    )
    return out


@pytest.fixture
def start(bundle_dir: Path, tmp_path: Path) -> Iterator[Callable[..., Server]]:
    servers: list[Server] = []

    def run(
        dsn: str, worker: str = "sync", rate: str = "1000/60", wait_ready: bool = True
    ) -> Server:
        env = {
            "NEWS_ADMIN_TOKEN": ADMIN_TOKEN,
            "NEWS_COMMENT_RATE_LIMIT": rate,
            "NEWS_WORKER_CLASS": worker,
        }
        server = Server(tmp_path, bundle_dir, dsn=dsn, env=env)
        servers.append(server)
        return server.start("/ready" if wait_ready else "/health")

    yield run
    for server in servers:
        server.kill()
    # The log never carries the admin token.
    for server in servers:
        assert ADMIN_TOKEN not in server.log_text()


def new_comment(server: Server, content: str, path: str = COMMENTS, **headers: str) -> Any:
    result = server.request(
        "POST", path, headers=headers, json={"author": "e2e", "content": content}
    )
    assert result.status == 201, result.body
    return result


@pytest.mark.postgres
@pytest.mark.parametrize("workers", [("sync", "gthread")])
def test_two_servers_share_postgres(
    pg_database: str, start: Callable[..., Server], workers: tuple[str, str]
) -> None:
    dsn = pg_dsn(pg_database)
    a, b = start(dsn, workers[0], rate="6/60"), start(dsn, workers[1], rate="6/60")
    first = new_comment(a, "from a").json()
    # Visible on the other server at once, through get, list, count and counts.
    assert b.request("GET", f"{COMMENTS}/{first['id']}").json() == public(first)
    second = new_comment(b, "from b").json()
    listed = a.request("GET", COMMENTS).json()
    assert [c["id"] for c in listed["items"]] == [second["id"], first["id"]]
    assert b.request("GET", COMMENTS + "/count").json()["count"] == 2
    counts = a.request("GET", "/api/v1/en/comments/counts?article_id=e2e-1&article_id=x")
    assert counts.json()["counts"] == {"e2e-1": 2, "x": None}
    # An Idempotency-Key used on one server replays on the other.
    keyed = new_comment(a, "keyed", **{"Idempotency-Key": "e2e-key"})
    replay = new_comment(b, "keyed", **{"Idempotency-Key": "e2e-key"})
    assert replay.json() == keyed.json()
    assert replay.headers["location"] == keyed.headers["location"]
    # Deleting on one server removes it on the other.
    auth = {"Authorization": f"Bearer {ADMIN_TOKEN}"}
    assert b.request("DELETE", f"{COMMENTS}/{first['id']}", headers=auth).status == 204
    assert a.request("GET", f"{COMMENTS}/{first['id']}").status == 404
    # One rate limit for the client across both servers (and all their workers):
    # 3 accepted so far, 3 more allowed.
    statuses = [new_comment_status(s, f"n{i}") for i, s in enumerate((a, b, a, b, a))]
    assert statuses == [201, 201, 201, 429, 429]
    limited = a.request("POST", COMMENTS, json={"author": "x", "content": "y"})
    assert limited.status == 429 and int(limited.headers["retry-after"]) >= 1


def new_comment_status(server: Server, content: str) -> int:
    # A new text each time: the same one again within ten minutes is a duplicate (409).
    return server.request("POST", COMMENTS, json={"author": "e2e", "content": content}).status


@pytest.mark.parametrize(
    "backend", ["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)]
)
def test_sigkill_after_201_keeps_the_comment(
    backend: str, request: pytest.FixtureRequest, tmp_path: Path, start: Callable[..., Server]
) -> None:
    if backend == "sqlite":
        dsn = f"sqlite:///{tmp_path / 'comments.sqlite3'}"
    else:
        dsn = pg_dsn(request.getfixturevalue("pg_database"))
    server = start(dsn)
    path = f"/api/v1/ko/articles/{quote(KO_ID)}/comments"
    created = new_comment(server, "durable", path=path)
    server.kill()  # SIGKILL to master and workers, right after the 201
    restarted = start(dsn)
    location = created.headers["location"]
    assert location.isascii()
    fetched = restarted.request("GET", location)
    assert fetched.status == 200
    assert fetched.json() == public(created.json())


def test_store_down_leaves_articles_working(start: Callable[..., Server]) -> None:
    server = start("postgresql://postgres@127.0.0.1:1/none", "gthread", wait_ready=False)
    assert server.request("GET", ARTICLE).status == 200
    assert server.request("GET", "/api/v1/en/articles").status == 200
    started = time.monotonic()
    result = server.request("POST", COMMENTS, json={"author": "a", "content": "b"})
    assert (result.status, result.json()) == (503, {"detail": "Comment store unavailable"})
    assert time.monotonic() - started < 5
    ready = server.request("GET", "/ready")
    assert ready.status == 503 and "refused" in ready.json()["detail"]
    assert server.request("GET", "/health").status == 200


def test_http_details_through_gunicorn(tmp_path: Path, start: Callable[..., Server]) -> None:
    server = start(f"sqlite:///{tmp_path / 'c.sqlite3'}", "gthread")
    created = new_comment(server, "hello")
    assert created.headers["cache-control"] == "no-store"
    head = server.request("HEAD", COMMENTS)
    assert head.status == 200 and head.body == b""
    # A chunked body (no Content-Length) is read, and bounded.
    conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=10)
    try:
        chunks = [b'{"author": "c", ', b'"content": "chunked"}']
        conn.request(
            "POST",
            COMMENTS,
            body=iter(chunks),
            encode_chunked=True,
            headers={"Content-Type": "application/json"},
        )
        resp = conn.getresponse()
        assert resp.status == 201, resp.read()
    finally:
        conn.close()
    conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=10)
    try:
        endless = (b"x" * 8192 for _ in range(1000))  # 8 MB, refused after 64 KiB
        # The server may close before we finish sending.
        with contextlib.suppress(OSError):
            conn.request(
                "POST",
                COMMENTS,
                body=endless,
                encode_chunked=True,
                headers={"Content-Type": "application/json"},
            )
        resp = conn.getresponse()
        assert resp.status == 413
    finally:
        conn.close()
    spec = server.request("GET", "/openapi.json").json()
    assert "/api/v1/{language}/articles/{article_id}/comments" in spec["paths"]
    assert "Comment" in spec["components"]["schemas"]
