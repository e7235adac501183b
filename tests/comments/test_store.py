"""The store going away and coming back, migrations racing, and forked workers."""

from __future__ import annotations

import multiprocessing
import sqlite3
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from app.comments import create_comment_service, open_store
from app.comments.migrations import MIGRATIONS
from app.comments.model import NewComment, RateLimit, StoreUnavailable
from app.comments.sqlite import SQLiteStore
from app.config import ConfigError, Settings
from tests.comments.support import Client, pg_admin, pg_dsn, post, require_postgres

PROJECT = Path(__file__).resolve().parents[2]
BASE = "/api/v1/en/articles/a1/comments"
UNAVAILABLE = {"detail": "Comment store unavailable"}
Build = Callable[..., Client]


def assert_unavailable(client: Client, within: float) -> None:
    """Every comment operation answers 503 quickly; checks before the store still run."""
    for method, path, kwargs in [
        ("POST", BASE, {"json": {"author": "a", "content": "b"}}),
        ("GET", BASE, {}),
        ("GET", f"{BASE}/count", {}),
        ("GET", f"{BASE}/some-id", {}),
        ("GET", "/api/v1/en/comments/counts", {"params": {"article_id": "a1"}}),
    ]:
        started = time.monotonic()
        result = client.simulate_request(method, path, **kwargs)
        assert (result.status_code, result.json) == (503, UNAVAILABLE), (method, path)
        assert time.monotonic() - started < within, (method, path)
    assert client.simulate_get("/api/v1/xx/articles/a1/comments").status_code == 400
    assert post(client, {"author": ""}).status_code == 422
    assert post(client, path="/api/v1/en/articles/zz/comments").status_code == 404
    assert client.service.ready_problem()


def wait_for_recovery(client: Client, timeout: float = 20.0) -> float:
    started = time.monotonic()
    while True:
        result = post(client)
        if result.status_code == 201:
            return time.monotonic() - started
        assert result.status_code == 503
        assert time.monotonic() - started < timeout, "store did not recover"
        time.sleep(0.2)


# -- nothing connects before first use -------------------------------------------------------


def test_creating_the_service_opens_nothing(tmp_path: Path) -> None:
    path = tmp_path / "sub" / "comments.sqlite3"
    service = create_comment_service(Settings(comments_dsn=f"sqlite:///{path}"), lambda *_: True)
    assert not path.parent.exists()
    service.close()
    # A PostgreSQL DSN is only parsed; the pool opens in the worker on first use.
    started = time.monotonic()
    dead = "postgresql://postgres@127.0.0.1:1/none"
    create_comment_service(Settings(comments_dsn=dead), lambda *_: True).close()
    assert time.monotonic() - started < 0.5


@pytest.mark.parametrize(
    "dsn", ["mysql://x", "sqlite:///", "sqlite://relative", "", "postgresql://h/db?nosuchoption=1"]
)
def test_bad_dsn_is_a_config_error(dsn: str) -> None:
    with pytest.raises(ConfigError):
        open_store(dsn)


# -- SQLite ------------------------------------------------------------------------------


def test_sqlite_unopenable_then_recovers(tmp_path: Path, build: Build) -> None:
    blocker = tmp_path / "data"
    blocker.write_text("a file where the database directory should be")
    client = build(f"sqlite:///{blocker / 'comments.sqlite3'}")
    assert_unavailable(client, within=1.0)
    assert client.service.ready_problem()
    blocker.unlink()
    assert wait_for_recovery(client) < 1.0
    assert client.service.ready_problem() is None


def test_sqlite_write_lock_gives_503_then_recovers(tmp_path: Path, build: Build) -> None:
    path = tmp_path / "comments.sqlite3"
    client = build(f"sqlite:///{path}", store=SQLiteStore(path, busy_timeout=0.3))
    first = post(client).json
    holder = sqlite3.connect(path, isolation_level=None)
    holder.execute("BEGIN IMMEDIATE")
    try:
        started = time.monotonic()
        result = post(client)
        assert (result.status_code, result.json) == (503, UNAVAILABLE)
        assert time.monotonic() - started < 2.0
        # WAL: readers are not blocked by a writer.
        assert client.simulate_get(f"{BASE}/{first['id']}").status_code == 200
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    assert post(client).status_code == 201
    assert client.simulate_get(f"{BASE}/count").json["count"] == 2


def test_sqlite_is_wal_with_full_sync(tmp_path: Path) -> None:
    path = tmp_path / "comments.sqlite3"
    store = SQLiteStore(path)
    store.ping()
    with store._connection() as conn:
        assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
        assert conn.execute("PRAGMA synchronous").fetchone()[0] == 2  # FULL
    store.close()


# -- PostgreSQL ----------------------------------------------------------------------------


@pytest.mark.postgres
def test_postgres_unreachable_is_a_fast_503(build: Build) -> None:
    require_postgres()
    client = build("postgresql://postgres@127.0.0.1:1/none")
    # The first request waits at most the pool timeout (2 s); the breaker answers the
    # ones right after it at once.
    assert_unavailable(client, within=3.0)
    started = time.monotonic()
    assert post(client).status_code == 503
    assert time.monotonic() - started < 0.5
    assert "refused" in (client.service.ready_problem() or "")


@pytest.mark.postgres
def test_postgres_goes_away_and_comes_back(pg_database: str, build: Build) -> None:
    client = build(pg_dsn(pg_database))
    first = post(client).json
    assert client.service.ready_problem() is None
    pg_admin(f'ALTER DATABASE "{pg_database}" ALLOW_CONNECTIONS false')
    try:
        pg_admin(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity"
            f" WHERE datname = '{pg_database}'"
        )
        assert_unavailable(client, within=3.0)
        assert "not currently accepting connections" in (client.service.ready_problem() or "")
    finally:
        pg_admin(f'ALTER DATABASE "{pg_database}" ALLOW_CONNECTIONS true')
    assert wait_for_recovery(client) < 10.0
    assert client.service.ready_problem() is None
    assert client.simulate_get(f"{BASE}/{first['id']}").status_code == 200
    assert client.simulate_get(f"{BASE}/count").json["count"] == 2


# -- migrations ----------------------------------------------------------------------------


def check_schema(dsn: str) -> bytes:
    store: Any = open_store(dsn)
    try:
        versions = store._run(
            lambda conn: [
                r[0]
                for r in conn.execute(
                    "SELECT version FROM schema_migrations ORDER BY version"
                ).fetchall()
            ]
        )
        secrets = store._run(
            lambda conn: conn.execute(
                "SELECT value FROM comment_secrets ORDER BY name DESC"  # the rate key first
            ).fetchall()
        )
    finally:
        store.close()
    assert versions == [migration.version for migration in MIGRATIONS]
    assert len(secrets) == 2  # the rate limit's key and the author tokens' key
    return bytes(secrets[0][0])


def test_migrations_race_between_threads(dsn: str) -> None:
    stores: list[Any] = [open_store(dsn) for _ in range(8)]
    barrier = threading.Barrier(len(stores))
    failures: list[BaseException] = []

    def start(store: Any) -> None:
        barrier.wait()
        try:
            store.ping()
        except BaseException as error:
            failures.append(error)

    threads = [threading.Thread(target=start, args=(s,)) for s in stores]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert failures == []
    secret = check_schema(dsn)
    assert {s._secret for s in stores} == {secret}
    for store in stores:
        store.close()


def test_a_migrated_sqlite_store_starts_without_the_write_lock(tmp_path: Path) -> None:
    """A worker's first request on an up-to-date database only reads the schema, so a
    writer holding the lock elsewhere (a backup, a slow create) does not turn it into a
    503; a database that still needs migrating does wait for the lock."""
    dsn = f"sqlite:///{tmp_path / 'c.sqlite3'}"
    first: Any = open_store(dsn)
    first.ping()  # migrates
    secret = first._secret
    first.close()
    locker = sqlite3.connect(tmp_path / "c.sqlite3", isolation_level=None)
    locker.execute("BEGIN EXCLUSIVE")
    try:
        fresh: Any = open_store(dsn)
        assert fresh.list_page("en", "a1", "newest", 10, 0) == (0, [])
        assert fresh._secret == secret
        fresh.close()
        empty: Any = open_store(f"sqlite:///{tmp_path / 'new.sqlite3'}")
        other = sqlite3.connect(tmp_path / "new.sqlite3", isolation_level=None)
        other.execute("BEGIN EXCLUSIVE")
        try:
            with pytest.raises(StoreUnavailable):
                empty.ping()  # must create the schema: needs the write lock
        finally:
            other.execute("ROLLBACK")
            other.close()
        empty.ping()
        empty.close()
    finally:
        locker.execute("ROLLBACK")
        locker.close()


MIGRATE_SCRIPT = """
import sys, time
from app.comments import open_store
store = open_store(sys.argv[1])
time.sleep(max(0.0, float(sys.argv[2]) - time.time()))  # start together
store.ping()
print(store._secret.hex())
store.close()
"""


def test_migrations_race_between_processes(dsn: str) -> None:
    start_at = str(time.time() + 3)
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", MIGRATE_SCRIPT, dsn, start_at],
            cwd=PROJECT,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for _ in range(6)
    ]
    outputs = [proc.communicate(timeout=60) for proc in procs]
    assert [p.returncode for p in procs] == [0] * 6, [err for _, err in outputs]
    secret = check_schema(dsn)
    assert {out.strip() for out, _ in outputs} == {secret.hex()}


# -- fork (gunicorn preload_app) ---------------------------------------------------------------


def _create(store: Any, content: str) -> str:
    new = NewComment("en", "a1", "a", content, None, None, content)
    return str(store.create(new, RateLimit(1000, 60, "fork-test")).comment.id)


def _child(store: Any, queue: Any) -> None:
    try:
        queue.put(_create(store, "child"))
    except BaseException as error:  # reported to the parent, which fails the test
        queue.put(repr(error))


def test_store_survives_fork(dsn: str) -> None:
    store: Any = open_store(dsn)
    try:
        parent_id = _create(store, "before fork")  # the parent now holds connections
        ctx = multiprocessing.get_context("fork")
        queue = ctx.Queue()
        child = ctx.Process(target=_child, args=(store, queue))
        child.start()
        child_id = queue.get(timeout=30)
        child.join(30)
        assert child.exitcode == 0
        assert len(child_id) == 26, child_id
        # The child neither used nor closed the parent's connections.
        after_id = _create(store, "after fork")
        assert store.count("en", "a1") == 3
        assert len({parent_id, child_id, after_id}) == 3
    finally:
        store.close()
