"""Faults injected into a serving gunicorn: the comment database goes away and comes back,
broken bundles are pushed, a worker is SIGKILLed under load, SIGTERM arrives mid-request.
"""

from __future__ import annotations

import http.client
import os
import secrets
import shutil
import signal
import socket
import sqlite3
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator
from functools import partial
from pathlib import Path
from urllib.parse import quote

import orjson
import pytest

from app import versions
from app.builder.builder import build
from app.bundle import format as fmt
from tests.helpers import bundle_object
from tests.reliability.harness import (
    SAMPLE_SRC,
    Reply,
    Server,
    TcpProxy,
    sample_article_ids,
    wait_until,
)

pytestmark = pytest.mark.e2e


def comments_path(article_id: str) -> str:
    return f"/api/v1/en/articles/{quote(article_id, safe='')}/comments"


def past_fail_fast(send: Callable[[], Reply]) -> Reply:
    """The reply to `send()`, sent again while it is a 503 for up to 10 s: `recovered` cannot
    tell which worker answered, so the other one may still be inside its short fail-fast
    window after the outage (a 503 there is before any write: nothing is stored). A lasting
    503 is returned, for the caller's assertion to fail."""
    deadline = time.monotonic() + 10
    reply = send()
    while reply.status == 503 and time.monotonic() < deadline:
        time.sleep(0.2)
        reply = send()
    return reply


def post_acked(srv: Server, article_id: str, n: int, tag: str) -> list[str]:
    """Create n comments (each retried past a worker's fail-fast window); the ids of those
    acknowledged with 201."""
    ids = []
    for i in range(n):
        reply = past_fail_fast(partial(srv.post_comment, "en", article_id, f"{tag} {i}"))
        assert reply.status == 201, reply.body
        ids.append(reply.json()["id"])
    return ids


def assert_all_present(srv: Server, article_id: str, ids: list[str]) -> None:
    """Every acknowledged comment is still there: a 404 (lost) or a lasting 503 fails."""
    for comment_id in ids:
        path = f"{comments_path(article_id)}/{comment_id}"
        status = past_fail_fast(partial(srv.request, "GET", path)).status
        assert status == 200, f"acknowledged comment {comment_id} lost: {status}"


def recovered(check: Callable[[], bool], timeout: float = 20, in_a_row: int = 6) -> bool:
    """True once `check` holds for several calls in a row: every worker has recovered
    (each has its own connections and fails fast for a moment after an error)."""
    return wait_until(lambda: all(check() for _ in range(in_a_row)), timeout)


def article_read_ok(srv: Server, article_id: str) -> bool:
    start = time.monotonic()
    reply = srv.request("GET", f"/api/v1/en/articles/{quote(article_id, safe='')}")
    return reply.status == 200 and time.monotonic() - start < 1.0


# -- the comment database goes away and comes back ------------------------------------------


def test_sqlite_store_unavailable_then_back(sample_bundle: Path, tmp_path: Path) -> None:
    """Another process holds SQLite's write lock past busy_timeout (a backup, a stuck
    writer): creates are 503, never 201-then-lost; reads go on; all recovers after."""
    with Server(tmp_path / "srv", sample_bundle) as srv:
        article = sample_article_ids(sample_bundle)[0]
        acked = post_acked(srv, article, 5, "before")
        assert srv.dsn is not None
        locker = sqlite3.connect(srv.dsn.removeprefix("sqlite:///"), isolation_level=None)
        locker.execute("BEGIN EXCLUSIVE")
        try:
            # One create waits out busy_timeout in one worker; the other worker serves.
            # (With every sync worker inside such a wait, reads would queue behind them:
            # see docs/reliability.md.)
            statuses: list[int] = []
            writer = threading.Thread(
                target=lambda: statuses.append(srv.post_comment("en", article, "during").status)
            )
            writer.start()
            time.sleep(0.3)
            assert article_read_ok(srv, article)  # article reads never touch the store
            writer.join(30)
            assert statuses == [503]
            assert srv.request("GET", comments_path(article)).status == 200  # WAL readers
            assert srv.post_comment("en", article, "during").status == 503
        finally:
            locker.execute("ROLLBACK")
            locker.close()
        assert wait_until(lambda: srv.post_comment("en", article, "after").status == 201, 10)
        assert_all_present(srv, article, acked)
        count = srv.request("GET", f"{comments_path(article)}/count").json()["count"]
        assert count == len(acked) + 1  # nothing answered 503 was stored behind our back
        assert "Traceback" not in srv.log_text()


@pytest.fixture
def postgres_db(postgres_admin_dsn: str) -> Iterator[str]:
    """A database of our own on the shared server, dropped afterwards."""
    import psycopg

    name = f"news_rel_{os.getpid()}_{secrets.token_hex(4)}"
    with psycopg.connect(postgres_admin_dsn, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    try:
        yield name
    finally:
        with psycopg.connect(postgres_admin_dsn, autocommit=True) as conn:
            terminate_backends(conn, name)
            conn.execute(f'DROP DATABASE IF EXISTS "{name}"')


def terminate_backends(conn: object, database: str) -> int:
    rows = conn.execute(  # type: ignore[attr-defined]
        "SELECT pg_terminate_backend(pid) FROM pg_stat_activity"
        " WHERE datname = %s AND pid <> pg_backend_pid()",
        (database,),
    ).fetchall()
    return len(rows)


@pytest.mark.postgres
def test_postgres_outage_then_back(
    sample_bundle: Path, tmp_path: Path, postgres_db: str, postgres_admin_dsn: str
) -> None:
    """The database stops (a relay we control is cut), comes back, then every session is
    killed as in a restart: 503 while down, recovery after, no acknowledged comment lost."""
    import psycopg

    proxy = TcpProxy(5432).start()
    dsn = f"postgresql://postgres@127.0.0.1:{proxy.port}/{postgres_db}"
    seen: Counter[int] = Counter()
    try:
        with Server(tmp_path / "srv", sample_bundle, dsn=dsn) as srv:
            article = sample_article_ids(sample_bundle)[0]

            def status(method: str, path: str) -> int:
                code = srv.request(method, path).status
                seen[code] += 1
                return code

            acked = post_acked(srv, article, 5, "before")
            proxy.cut()
            assert article_read_ok(srv, article)
            for _ in range(3):
                started = time.monotonic()
                code = srv.post_comment("en", article, "during").status
                seen[code] += 1
                assert code == 503
                assert time.monotonic() - started < 8  # fails fast, does not hang
                assert status("GET", comments_path(article)) == 503
            assert status("GET", "/ready") == 503
            assert article_read_ok(srv, article)

            proxy.start()
            assert recovered(lambda: status("GET", f"{comments_path(article)}/count") == 200)
            acked += post_acked(srv, article, 2, "after")
            assert_all_present(srv, article, acked)

            # A database restart: every session dies under the pool's feet.
            with psycopg.connect(postgres_admin_dsn, autocommit=True) as admin:
                assert terminate_backends(admin, postgres_db) >= 1
            assert recovered(lambda: status("GET", comments_path(article)) == 200)
            acked += post_acked(srv, article, 2, "restarted")
            assert_all_present(srv, article, acked)
            count = srv.request("GET", f"{comments_path(article)}/count").json()["count"]
            assert count == len(acked)
            assert set(seen) <= {200, 201, 503}, seen
            assert "Traceback" not in srv.log_text()
    finally:
        proxy.cut()


# -- broken bundles pushed while serving ----------------------------------------------------


def _truncate(bundle: Path) -> None:
    path = bundle_object(bundle, "en", fmt.ARTICLES_BIN)
    path.write_bytes(path.read_bytes()[:-100])


def _corrupt(bundle: Path) -> None:
    path = bundle_object(bundle, "ko", fmt.ARTICLES_BIN)
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 0x20  # same size, one bit
    path.write_bytes(bytes(data))


def _wrong_version(bundle: Path) -> None:
    manifest = orjson.loads((bundle / fmt.MANIFEST).read_bytes())
    manifest["format_version"] = versions.BUNDLE_FORMAT_VERSION + 1
    (bundle / fmt.MANIFEST).write_bytes(orjson.dumps(manifest))


def _manifest_garbage(bundle: Path) -> None:
    (bundle / fmt.MANIFEST).write_bytes(b'{"format": "news-bundle", "format_ver')


def _missing_file(bundle: Path) -> None:
    bundle_object(bundle, "ja", fmt.IDS_BIN).unlink()


BAD_BUNDLES: tuple[tuple[str, Callable[[Path], None], str], ...] = (
    ("truncated", _truncate, "truncated"),
    ("corrupted", _corrupt, "checksum mismatch"),
    ("wrong-version", _wrong_version, "format version"),
    ("manifest-garbage", _manifest_garbage, "not valid JSON"),
    ("missing-file", _missing_file, "No such file"),
)


def test_bad_bundles_refused_while_serving(sample_bundle: Path, tmp_path: Path) -> None:
    served = tmp_path / "bundles"
    shutil.copytree(sample_bundle, served)
    with Server(tmp_path / "srv", served) as srv:
        old = srv.request("GET", "/ready").json()["bundle"]
        for name, damage, reason in BAD_BUNDLES:
            refusals = srv.log_text().count("refusing new bundle")
            staged = tmp_path / f"push-{name}"
            shutil.copytree(sample_bundle, staged)
            damage(staged)
            # What a broken pipeline would do: swap it in without install_bundle's check.
            aside = tmp_path / f"aside-{name}"
            os.rename(served, aside)
            os.rename(staged, served)
            shutil.rmtree(aside)
            deadline = time.monotonic() + 1.5  # > 5 bundle checks in each worker
            while time.monotonic() < deadline:
                assert srv.request("GET", "/api/v1/en/articles/latest?limit=3").status == 200
                assert srv.request("GET", "/ready").json()["bundle"] == old, name
            log = srv.log_text()
            assert log.count("refusing new bundle") > refusals, f"{name}: not logged"
            assert reason in log.split("refusing new bundle")[-1], f"{name}: reason not logged"
        # A good bundle is still taken after all that.
        src = tmp_path / "src"
        shutil.copytree(SAMPLE_SRC, src)
        record = orjson.loads((SAMPLE_SRC / "en.jsonl").read_text().splitlines()[0])
        record["id"] = "rel-new-article"
        (src / "zz-extra.jsonl").write_bytes(orjson.dumps(record) + b"\n")
        new = build(src, served)
        assert wait_until(lambda: srv.request("GET", "/ready").json()["bundle"] == new, 10)
        assert wait_until(
            lambda: srv.request("GET", "/api/v1/en/articles/rel-new-article").status == 200, 5
        )


# -- processes --------------------------------------------------------------------------------


def test_worker_killed_under_load(sample_bundle: Path, tmp_path: Path) -> None:
    """SIGKILL one of two workers mid-load: gunicorn replaces it, and the only requests
    that fail are the ones that worker held (at most one per client thread)."""
    with Server(tmp_path / "srv", sample_bundle) as srv:
        stop = threading.Event()
        results: Counter[str] = Counter()
        lock = threading.Lock()

        def client() -> None:
            while not stop.is_set():
                try:
                    ok = srv.request("GET", "/api/v1/en/articles?page_size=5", timeout=5).status
                    outcome = "ok" if ok == 200 else f"status {ok}"
                except (OSError, http.client.HTTPException) as exc:
                    # The killed worker's own request dies mid-response (IncompleteRead).
                    outcome = type(exc).__name__
                with lock:
                    results[outcome] += 1

        threads = [threading.Thread(target=client) for _ in range(4)]
        for t in threads:
            t.start()
        time.sleep(1.0)
        victim = srv.worker_pids()[0]
        os.kill(victim, signal.SIGKILL)
        assert wait_until(
            lambda: len(srv.worker_pids()) == 2 and victim not in srv.worker_pids(), 10
        )
        with lock:
            before = sum(results.values())
        time.sleep(1.5)
        stop.set()
        for t in threads:
            t.join(10)
        assert not any(t.is_alive() for t in threads)
        failed = sum(n for outcome, n in results.items() if outcome != "ok")
        assert failed <= len(threads), results
        assert results["ok"] > before  # the replacement serves
        assert srv.request("GET", "/health").status == 200


def test_sigterm_drains_in_flight_requests(sample_bundle: Path, tmp_path: Path) -> None:
    """Requests whose bodies are still arriving when SIGTERM comes are answered (201, and
    stored); then the master exits 0 and new connections are refused."""
    srv = Server(tmp_path / "srv", sample_bundle).start()
    try:
        article = sample_article_ids(sample_bundle)[0]
        # Two texts: the same one twice from one client would be a duplicate (409).
        bodies = [
            orjson.dumps({"author": "drain", "content": f"sent across a SIGTERM ({n})"})
            for n in range(2)
        ]
        socks = []
        for body in bodies:  # one in each worker
            head = (
                f"POST {comments_path(article)} HTTP/1.1\r\nHost: x\r\n"
                f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n"
                "Connection: close\r\n\r\n"
            ).encode()
            sock = socket.create_connection(("127.0.0.1", srv.port), timeout=20)
            sock.sendall(head + body[:10])
            socks.append(sock)
        time.sleep(0.5)  # both workers are now blocked reading those bodies
        os.kill(srv.pid, signal.SIGTERM)
        time.sleep(1.0)
        replies = []
        for sock, body in zip(socks, bodies, strict=True):
            sock.sendall(body[10:])
            replies.append(sock.recv(65536))
            sock.close()
        assert all(r.startswith(b"HTTP/1.1 201") for r in replies), replies
        assert srv.process is not None
        assert srv.process.wait(20) == 0
        with pytest.raises(OSError):
            socket.create_connection(("127.0.0.1", srv.port), timeout=2).close()
        assert srv.dsn is not None
        with sqlite3.connect(srv.dsn.removeprefix("sqlite:///")) as db:
            (stored,) = db.execute(
                "SELECT count(*) FROM comments WHERE author = 'drain'"
            ).fetchone()
        assert stored == 2
    finally:
        srv.kill()
