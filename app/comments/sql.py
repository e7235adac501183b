"""The comment store algorithm, shared by the SQLite and PostgreSQL backends.

Backends supply connections, transactions, placeholder style and timestamp encoding;
everything that decides what a request does (idempotency, parent check, rate limit)
lives here once, inside one write transaction, so the two backends behave alike.
"""

from __future__ import annotations

import hashlib
import hmac
import logging
import math
import os
import secrets
import threading
import time
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager
from datetime import UTC, datetime
from typing import Any, TypeVar

from app.comments.migrations import (
    MIGRATIONS,
    RATE_KEY_SECRET,
    SCHEMA_TABLE,
    SCHEMA_TABLE_EXISTS,
    Dialect,
)
from app.comments.model import (
    Comment,
    Created,
    IdempotencyConflict,
    NewComment,
    Order,
    ParentNotFound,
    RateLimit,
    RateLimited,
    StoreUnavailable,
    new_comment_id,
)
from app.metrics import COMMENT_STORE_ERRORS
from app.models import Language

log = logging.getLogger("app.comments")

T = TypeVar("T")

_COLUMNS = "id, article_id, language, parent_id, author, content, created_at"
# After a failure to get a connection, fail fast for this long instead of letting every
# request wait out the connect timeout again; recovery is at most this much later.
BREAKER_SECONDS = 1.0
# How often one process sweeps rate-limit events of clients that never came back.
SWEEP_SECONDS = 60.0


class SQLStore(ABC):
    dialect: Dialect
    # The driver's parameter marker: every statement below is written with it, so no SQL
    # text is ever rewritten (a `?` is also a PostgreSQL operator).
    param: str

    def __init__(self) -> None:
        p = self.param
        self._where_visible = f"language = {p} AND article_id = {p} AND deleted_at IS NULL"
        self._lock = threading.Lock()
        self._pid = os.getpid()
        self._migrated = False
        self._secret: bytes | None = None
        self._down_until = 0.0
        self._down_reason = ""
        self._next_sweep = 0.0

    # -- backend hooks ------------------------------------------------------------

    @abstractmethod
    def _connection(self) -> AbstractContextManager[Any]:
        """A connection in autocommit mode, returned to the backend's pool afterwards."""

    @abstractmethod
    def _write(self, conn: Any, lock_key: bytes | None) -> AbstractContextManager[None]:
        """A write transaction serialised against others holding the same `lock_key`."""

    @abstractmethod
    def _read(self, conn: Any) -> AbstractContextManager[None]:
        """A transaction whose statements all see one snapshot."""

    @abstractmethod
    def _migration_lock(self, conn: Any) -> AbstractContextManager[None]:
        """A transaction that excludes every other migrating process or instance."""

    @abstractmethod
    def _ts_in(self, value: datetime) -> Any: ...

    @abstractmethod
    def _ts_out(self, value: Any) -> datetime: ...

    @abstractmethod
    def _unique_violation(self, error: BaseException) -> bool: ...

    @abstractmethod
    def _unavailable(self, error: BaseException) -> bool:
        """True for errors that mean the database is unreachable, locked or timed out."""

    @abstractmethod
    def _reset_after_fork(self) -> None:
        """Drop (without closing) connections inherited from the parent process."""

    @abstractmethod
    def _close(self) -> None: ...

    # -- plumbing -----------------------------------------------------------------

    def _check_fork(self) -> None:
        if os.getpid() != self._pid:
            # gunicorn forked us after the app was imported (preload_app): connections
            # made so far belong to the parent process.
            with self._lock:
                if os.getpid() != self._pid:
                    self._reset_after_fork()
                    self._pid = os.getpid()

    def close(self) -> None:
        self._check_fork()
        self._close()

    def _marks(self, n: int) -> str:
        """`n` parameter markers, comma-separated."""
        return ", ".join([self.param] * n)

    def _exec(self, conn: Any, statement: str, params: tuple[Any, ...] = ()) -> Any:
        return conn.execute(statement, params)

    def _run(self, operation: Callable[[Any], T]) -> T:
        self._check_fork()
        if time.monotonic() < self._down_until:
            COMMENT_STORE_ERRORS.labels("breaker_open").inc()
            raise StoreUnavailable(self._down_reason)
        try:
            with self._connection() as conn:
                if not self._migrated:
                    self._migrate(conn)
                return operation(conn)
        except Exception as error:
            if not self._unavailable(error):
                raise
            reason = self._reason(error)
            COMMENT_STORE_ERRORS.labels("unavailable").inc()
            log.warning("comment store unavailable: %s", reason)
            if self._breaker_trips(error):
                self._down_reason = reason
                self._down_until = time.monotonic() + BREAKER_SECONDS
            raise StoreUnavailable(reason) from error

    def _reason(self, error: BaseException) -> str:
        return short_reason(error)

    def _breaker_trips(self, error: BaseException) -> bool:
        """Only failures to reach the database open the breaker, not a slow query."""
        return False

    def _migrate(self, conn: Any) -> None:
        with self._lock:
            if self._migrated:
                return
            # A read first: a worker's first request must not need SQLite's write lock (or
            # PostgreSQL's migration lock) when there is nothing to migrate, or a busy
            # writer elsewhere would turn that request, even a read, into a 503.
            value = self._current_secret(conn)
            if value is None:
                value = self._apply_migrations(conn)
            self._secret = value
            self._migrated = True

    def _apply_migrations(self, conn: Any) -> bytes:
        """Applies the missing versions under the migration lock; returns the rate-key
        secret, generated here if no instance has yet."""
        with self._migration_lock(conn):
            self._exec(conn, SCHEMA_TABLE[self.dialect])
            done = self._applied_versions(conn)
            for migration in MIGRATIONS:
                if migration.version in done:
                    continue
                for statement in migration.statements[self.dialect]:
                    self._exec(conn, statement)
                self._exec(
                    conn,
                    "INSERT INTO schema_migrations (version, name, applied_at)"
                    f" VALUES ({self._marks(3)})",
                    (migration.version, migration.name, self._ts_in(datetime.now(UTC))),
                )
                log.info("comment store: applied migration %d", migration.version)
            # Generated once, by whichever instance migrates first, so that every
            # process and instance hashes a client address to the same key.
            value = self._stored_secret(conn)
            if value is None:
                value = secrets.token_bytes(32)
                self._exec(
                    conn,
                    f"INSERT INTO comment_secrets (name, value) VALUES ({self._marks(2)})",
                    (RATE_KEY_SECRET, value),
                )
        return value

    def _current_secret(self, conn: Any) -> bytes | None:
        """The rate-key secret if every migration is applied already, else None."""
        with self._read(conn):
            if not self._exec(conn, SCHEMA_TABLE_EXISTS[self.dialect]).fetchone()[0]:
                return None
            done = self._applied_versions(conn)
            if any(migration.version not in done for migration in MIGRATIONS):
                return None
            return self._stored_secret(conn)

    def _applied_versions(self, conn: Any) -> set[int]:
        return {row[0] for row in self._exec(conn, "SELECT version FROM schema_migrations")}

    def _stored_secret(self, conn: Any) -> bytes | None:
        row = self._exec(
            conn, f"SELECT value FROM comment_secrets WHERE name = {self.param}", (RATE_KEY_SECRET,)
        ).fetchone()
        return None if row is None else bytes(row[0])

    # -- operations ---------------------------------------------------------------

    def ping(self) -> None:
        self._run(lambda conn: self._exec(conn, "SELECT 1").fetchone())

    def get(self, language: str, article_id: str, comment_id: str) -> Comment | None:
        def op(conn: Any) -> Comment | None:
            return self._visible(conn, language, article_id, comment_id)

        return self._run(op)

    def list_page(
        self, language: str, article_id: str, order: Order, limit: int, offset: int
    ) -> tuple[int, list[Comment]]:
        direction = "DESC" if order == "newest" else "ASC"

        def op(conn: Any) -> tuple[int, list[Comment]]:
            with self._read(conn):
                (total,) = self._exec(
                    conn,
                    f"SELECT count(*) FROM comments WHERE {self._where_visible}",
                    (language, article_id),
                ).fetchone()
                # A page past the end is answered without asking the database for an
                # offset that may not even fit its integer type.
                if offset >= total:
                    return total, []
                rows = self._exec(
                    conn,
                    f"SELECT {_COLUMNS} FROM comments WHERE {self._where_visible}"
                    f" ORDER BY created_at {direction}, id {direction}"
                    f" LIMIT {self.param} OFFSET {self.param}",
                    (language, article_id, limit, offset),
                ).fetchall()
            return total, [self._comment(row) for row in rows]

        return self._run(op)

    def count(self, language: str, article_id: str) -> int:
        def op(conn: Any) -> int:
            sql = f"SELECT count(*) FROM comments WHERE {self._where_visible}"
            return int(self._exec(conn, sql, (language, article_id)).fetchone()[0])

        return self._run(op)

    def counts(self, language: str, article_ids: list[str]) -> dict[str, int]:
        unique = sorted(set(article_ids))
        if not unique:
            return {}

        def op(conn: Any) -> dict[str, int]:
            rows = self._exec(
                conn,
                f"SELECT article_id, count(*) FROM comments WHERE language = {self.param}"
                f" AND article_id IN ({self._marks(len(unique))}) AND deleted_at IS NULL"
                " GROUP BY article_id",
                (language, *unique),
            ).fetchall()
            found = {row[0]: int(row[1]) for row in rows}
            return {article_id: found.get(article_id, 0) for article_id in unique}

        return self._run(op)

    def delete(self, language: str, article_id: str, comment_id: str) -> bool:
        def op(conn: Any) -> bool:
            with self._write(conn, None):
                cursor = self._exec(
                    conn,
                    f"UPDATE comments SET deleted_at = {self.param}, author = '', content = ''"
                    f" WHERE id = {self.param} AND {self._where_visible}",
                    (self._ts_in(datetime.now(UTC)), comment_id, language, article_id),
                )
                return bool(cursor.rowcount)

        return self._run(op)

    def create(self, new: NewComment, rate: RateLimit) -> Created:
        def op(conn: Any) -> Created:
            assert self._secret is not None  # set by _migrate before any operation runs
            client_key = hmac.new(self._secret, rate.client.encode(), hashlib.sha256).digest()
            try:
                with self._write(conn, client_key):
                    if new.idempotency_key is not None:
                        earlier = self._by_key(conn, new)
                        if earlier is not None:
                            return earlier
                    if new.parent_id is not None and (
                        self._visible(conn, new.language, new.article_id, new.parent_id) is None
                    ):
                        raise ParentNotFound(new.parent_id)
                    now = time.time()
                    self._check_rate(conn, client_key, rate, now)
                    comment = Comment(
                        id=new_comment_id(),
                        article_id=new.article_id,
                        language=Language(new.language),
                        parent_id=new.parent_id,
                        author=new.author,
                        content=new.content,
                        created_at=datetime.fromtimestamp(now, UTC),
                    )
                    self._exec(
                        conn,
                        f"INSERT INTO comments ({_COLUMNS}, idempotency_key, request_hash)"
                        f" VALUES ({self._marks(9)})",
                        (
                            comment.id,
                            comment.article_id,
                            comment.language,
                            comment.parent_id,
                            comment.author,
                            comment.content,
                            self._ts_in(comment.created_at),
                            new.idempotency_key,
                            new.request_hash,
                        ),
                    )
                    self._sweep(conn, rate, now)
                return Created(comment, replayed=False)
            except Exception as error:
                if new.idempotency_key is None or not self._unique_violation(error):
                    raise
            # Another request with the same key committed first (a different client, so
            # not serialised by our lock): answer with its comment.
            earlier = self._by_key(conn, new)
            if earlier is None:
                raise StoreUnavailable("idempotency key vanished during a race")
            return earlier

        return self._run(op)

    # -- helpers --------------------------------------------------------------------

    def _comment(self, row: tuple[Any, ...]) -> Comment:
        return Comment(
            id=row[0],
            article_id=row[1],
            language=row[2],
            parent_id=row[3],
            author=row[4],
            content=row[5],
            created_at=self._ts_out(row[6]),
        )

    def _visible(
        self, conn: Any, language: str, article_id: str, comment_id: str
    ) -> Comment | None:
        row = self._exec(
            conn,
            f"SELECT {_COLUMNS} FROM comments WHERE id = {self.param} AND {self._where_visible}",
            (comment_id, language, article_id),
        ).fetchone()
        return None if row is None else self._comment(row)

    def _by_key(self, conn: Any, new: NewComment) -> Created | None:
        row = self._exec(
            conn,
            f"SELECT {_COLUMNS}, deleted_at, request_hash FROM comments"
            f" WHERE language = {self.param} AND article_id = {self.param}"
            f" AND idempotency_key = {self.param}",
            (new.language, new.article_id, new.idempotency_key),
        ).fetchone()
        if row is None:
            return None
        if row[7] is not None:
            raise IdempotencyConflict("The comment created with this Idempotency-Key was deleted")
        if row[8] != new.request_hash:
            raise IdempotencyConflict(
                "Idempotency-Key was already used for a different comment on this article"
            )
        return Created(self._comment(row[:7]), replayed=True)

    def _check_rate(self, conn: Any, client_key: bytes, rate: RateLimit, now: float) -> None:
        """Sliding window: at most `rate.count` accepted creates in any `rate.seconds`."""
        since = now - rate.seconds
        self._exec(
            conn,
            f"DELETE FROM comment_rate_events WHERE client_key = {self.param}"
            f" AND at <= {self.param}",
            (client_key, since),
        )
        used, oldest = self._exec(
            conn,
            "SELECT count(*), min(at) FROM comment_rate_events"
            f" WHERE client_key = {self.param} AND at > {self.param}",
            (client_key, since),
        ).fetchone()
        if used >= rate.count:
            raise RateLimited(max(1, math.ceil(oldest + rate.seconds - now)))
        self._exec(
            conn,
            f"INSERT INTO comment_rate_events (client_key, at) VALUES ({self._marks(2)})",
            (client_key, now),
        )

    def _sweep(self, conn: Any, rate: RateLimit, now: float) -> None:
        """Forget expired events of clients that never came back (bounded table size)."""
        if time.monotonic() < self._next_sweep:
            return
        self._next_sweep = time.monotonic() + SWEEP_SECONDS
        self._exec(
            conn, f"DELETE FROM comment_rate_events WHERE at <= {self.param}", (now - rate.seconds,)
        )


def short_reason(error: BaseException) -> str:
    lines: Iterator[str] = (line.strip() for line in str(error).splitlines())
    text = next((line for line in lines if line), "") or type(error).__name__
    return text[:200]
