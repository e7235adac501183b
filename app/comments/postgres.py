"""PostgreSQL backend: one database shared by every worker and instance."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from typing import Any

import psycopg
import psycopg.errors
from psycopg.conninfo import conninfo_to_dict
from psycopg_pool import ConnectionPool, PoolTimeout

from app.comments.sql import SQLStore, short_reason

# Advisory lock ids ("news" + "cmig" / "crat" in ASCII): one for migrations, one
# namespace of per-client locks that serialise a client's creates across instances.
_MIGRATION_LOCK = 0x6E657773636D6967
_RATE_LOCK_NAMESPACE = 0x63726174
# ...and "news" + "mlog": held from a moderation log entry's insert to the commit.
_LOG_LOCK = 0x6E6577736D6C6F67


class _Pool(ConnectionPool[psycopg.Connection[Any]]):
    """Remembers why the last connection attempt failed.

    A request that times out waiting for a connection only gets PoolTimeout; the
    refused connection or missing database behind it is what /ready should report.
    """

    last_error = ""

    def _connect(self, timeout: float | None = None) -> psycopg.Connection[Any]:
        try:
            conn = super()._connect(timeout)
        except psycopg.Error as error:
            self.last_error = short_reason(error)
            raise
        self.last_error = ""
        return conn


class PostgresStore(SQLStore):
    dialect = "postgres"
    param = "%s"

    def __init__(
        self,
        dsn: str,
        *,
        pool_timeout: float = 2.0,
        connect_timeout: int = 2,
        statement_timeout_ms: int = 5000,
        max_size: int = 10,
    ) -> None:
        super().__init__()
        # Parsing here (no connection yet) rejects a malformed DSN at start-up.
        params = conninfo_to_dict(dsn)
        self._dsn = dsn
        self._kwargs: dict[str, Any] = {"autocommit": True}
        if "connect_timeout" not in params:
            self._kwargs["connect_timeout"] = connect_timeout
        self._pool_timeout = pool_timeout
        self._statement_timeout_ms = statement_timeout_ms
        self._max_size = max_size
        self._pool: _Pool | None = None
        self._pool_lock = threading.Lock()
        # Pools inherited across fork: their sockets belong to the parent, and closing
        # them here would end the parent's sessions, so they are only parked.
        self._abandoned: list[_Pool] = []

    def _get_pool(self) -> _Pool:
        # Opened on first use, i.e. in the worker: gunicorn's master (preload_app)
        # never holds a connection or the pool's threads, which fork would not copy.
        with self._pool_lock:
            if self._pool is None:
                self._pool = _Pool(
                    self._dsn,
                    kwargs=self._kwargs,
                    min_size=1,
                    max_size=self._max_size,
                    open=False,
                    name="comments",
                    timeout=self._pool_timeout,
                    # Give up a failing connect attempt quickly, so the next request
                    # starts a fresh one instead of waiting out a long backoff: this
                    # bounds how long recovery takes once the database is back.
                    reconnect_timeout=2.0,
                    configure=self._configure,
                    # Connections killed by a database restart are noticed and replaced
                    # before a request gets them.
                    check=ConnectionPool.check_connection,
                )
                self._pool.open(wait=False)
            return self._pool

    def _configure(self, conn: psycopg.Connection[Any]) -> None:
        conn.execute(
            "SELECT set_config('statement_timeout', %s, false),"
            " set_config('idle_in_transaction_session_timeout', %s, false)",
            (str(self._statement_timeout_ms), str(self._statement_timeout_ms * 2)),
        )

    @contextmanager
    def _connection(self) -> Iterator[psycopg.Connection[Any]]:
        with self._get_pool().connection() as conn:
            yield conn

    @contextmanager
    def _write(self, conn: psycopg.Connection[Any], lock_key: bytes | None) -> Iterator[None]:
        with conn.transaction():
            if lock_key is not None:
                # One client's creates run one at a time across all instances, so the
                # count-then-insert of the rate limit and the idempotency lookup are exact.
                conn.execute(
                    "SELECT pg_advisory_xact_lock(%s, %s)",
                    (_RATE_LOCK_NAMESPACE, int.from_bytes(lock_key[:4], "big", signed=True)),
                )
            yield

    def _lock_log(self, conn: psycopg.Connection[Any]) -> None:
        conn.execute("SELECT pg_advisory_xact_lock(%s)", (_LOG_LOCK,))

    @contextmanager
    def _read(self, conn: psycopg.Connection[Any]) -> Iterator[None]:
        with conn.transaction():
            # total and page come from one snapshot.
            conn.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY")
            yield

    @contextmanager
    def _migration_lock(self, conn: psycopg.Connection[Any]) -> Iterator[None]:
        with conn.transaction():
            conn.execute("SELECT pg_advisory_xact_lock(%s)", (_MIGRATION_LOCK,))
            yield

    def _ts_in(self, value: datetime) -> datetime:
        return value

    def _ts_out(self, value: Any) -> datetime:
        assert isinstance(value, datetime)  # timestamptz arrives as an aware datetime
        return value.astimezone(UTC)

    def _unique_violation(self, error: BaseException) -> bool:
        return isinstance(error, psycopg.errors.UniqueViolation)

    def _unavailable(self, error: BaseException) -> bool:
        # OperationalError covers refused or dropped connections, a missing database,
        # shutdown and statement_timeout; PoolTimeout is one of them.
        return isinstance(error, psycopg.OperationalError)

    def _breaker_trips(self, error: BaseException) -> bool:
        return isinstance(error, PoolTimeout)

    def _reason(self, error: BaseException) -> str:
        pool = self._pool
        if isinstance(error, PoolTimeout) and pool is not None and pool.last_error:
            return pool.last_error
        return short_reason(error)

    def _reset_after_fork(self) -> None:
        with self._pool_lock:
            if self._pool is not None:
                self._abandoned.append(self._pool)
                self._pool = None

    def _close(self) -> None:
        with self._pool_lock:
            if self._pool is not None:
                self._pool.close()
                self._pool = None
