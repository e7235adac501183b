"""The plumbing of the comment store, shared by the SQLite and PostgreSQL backends.

Backends supply connections, transactions, placeholder style and timestamp encoding; this
class runs operations with the circuit breaker, applies the migrations, and owns what every
operation shares: the secrets, the rate limit, the row shapes and the moderation log. The
operations themselves are app/comments/sql.py (a comment's life) and
app/comments/moderation_sql.py (reports, notices, queues, decisions).
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

from app.comments.comment_wire import Comment
from app.comments.migrations import (
    AUTHOR_KEY_SECRET,
    MIGRATIONS,
    RATE_KEY_SECRET,
    SCHEMA_TABLE,
    SCHEMA_TABLE_EXISTS,
    Dialect,
)
from app.comments.model import Mod, RateLimit, RateLimited, Stored, StoreUnavailable
from app.metrics import COMMENT_STORE_ERRORS

log = logging.getLogger("app.comments")

T = TypeVar("T")

# What readers see of a comment, then what its author and moderators see too.
COLUMNS = "id, article_id, language, parent_id, author, content, created_at, featured, edited_at"
STORED = (
    f"{COLUMNS}, status, author_id, mod_reason, mod_automated, mod_at, mod_moderator,"
    " mod_note, mod_explanation"
)
# The one predicate of every reader's query; a literal, so the partial index comments_public
# (WHERE status = 'visible') serves it in both engines.
VISIBLE = "status = 'visible'"
# After a failure to get a connection, fail fast for this long instead of letting every
# request wait out the connect timeout again; recovery is at most this much later.
BREAKER_SECONDS = 1.0
# How often one process sweeps rate-limit events of clients that never came back.
SWEEP_SECONDS = 60.0


class SQLBase(ABC):
    dialect: Dialect
    # The driver's parameter marker: every statement below is written with it, so no SQL
    # text is ever rewritten (a `?` is also a PostgreSQL operator).
    param: str

    def __init__(self) -> None:
        p = self.param
        self._where_visible = f"language = {p} AND article_id = {p} AND {VISIBLE}"
        self._true, self._false = ("1", "0") if self.dialect == "sqlite" else ("true", "false")
        self._lock = threading.Lock()
        self._pid = os.getpid()
        self._migrated = False
        self._secret: bytes | None = None
        self.author_secret: bytes | None = None  # read by app.comments with the first request
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
            self.author_secret = self._stored_secret(conn, AUTHOR_KEY_SECRET)
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
            # process and instance hashes a client address (and derives an author's
            # token, without NEWS_AUTHOR_SECRET) with the same key.
            for name in (AUTHOR_KEY_SECRET, RATE_KEY_SECRET):
                if self._stored_secret(conn, name) is None:
                    self._exec(
                        conn,
                        f"INSERT INTO comment_secrets (name, value) VALUES ({self._marks(2)})",
                        (name, secrets.token_bytes(32)),
                    )
            value = self._stored_secret(conn, RATE_KEY_SECRET)
        assert value is not None
        return value

    def _current_secret(self, conn: Any) -> bytes | None:
        """The rate-key secret if every migration is applied already, else None."""
        with self._read(conn):
            if not self._exec(conn, SCHEMA_TABLE_EXISTS[self.dialect]).fetchone()[0]:
                return None
            done = self._applied_versions(conn)
            if any(migration.version not in done for migration in MIGRATIONS):
                return None
            return self._stored_secret(conn, RATE_KEY_SECRET)

    def _applied_versions(self, conn: Any) -> set[int]:
        return {row[0] for row in self._exec(conn, "SELECT version FROM schema_migrations")}

    def _stored_secret(self, conn: Any, name: str) -> bytes | None:
        row = self._exec(
            conn, f"SELECT value FROM comment_secrets WHERE name = {self.param}", (name,)
        ).fetchone()
        return None if row is None else bytes(row[0])

    # -- shared by the operations -------------------------------------------------------

    def ping(self) -> None:
        self._run(lambda conn: self._exec(conn, "SELECT 1").fetchone())

    @abstractmethod
    def _lock_log(self, conn: Any) -> None:
        """Held from a log entry's insert to the commit, so that log ids commit in order and
        a reader following `after=<id>` never skips an entry committed late."""

    def _client_key(self, client: str, purpose: str = "") -> bytes:
        """HMAC of a client's address (never the address), one bucket per purpose."""
        assert self._secret is not None  # set by _migrate before any operation runs
        return hmac.new(self._secret, (purpose + client).encode(), hashlib.sha256).digest()

    def _stored_row(
        self, conn: Any, language: str, article_id: str, comment_id: str, lock: bool = False
    ) -> Stored | None:
        """A comment of the article in any status but `erased`; with `lock`, in a write
        transaction, its row stays locked to the commit (PostgreSQL: two decisions or two
        reports of one comment run one after the other; SQLite writes one at a time)."""
        p = self.param
        row = self._exec(
            conn,
            f"SELECT {STORED} FROM comments WHERE id = {p} AND language = {p}"
            f" AND article_id = {p} AND status <> 'erased'"
            + (" FOR UPDATE" if lock and self.dialect == "postgres" else ""),
            (comment_id, language, article_id),
        ).fetchone()
        return None if row is None else self._stored(row)

    def _page(
        self,
        conn: Any,
        columns: str,
        where: str,
        params: tuple[Any, ...],
        order: str,
        limit: int,
        offset: int,
    ) -> tuple[int, list[Any]]:
        """The total of the comments `where` selects and one page of their rows, by
        `created_at` then `id` (`order` "newest": descending), from one snapshot."""
        direction = "DESC" if order == "newest" else "ASC"
        with self._read(conn):
            (total,) = self._exec(
                conn, f"SELECT count(*) FROM comments WHERE {where}", params
            ).fetchone()
            # A page past the end is answered without asking the database for an offset
            # that may not even fit its integer type.
            if offset >= total:
                return total, []
            rows = self._exec(
                conn,
                f"SELECT {columns} FROM comments WHERE {where}"
                f" ORDER BY created_at {direction}, id {direction}"
                f" LIMIT {self.param} OFFSET {self.param}",
                (*params, limit, offset),
            ).fetchall()
        return total, rows

    def _settings(self, conn: Any, language: str, article_id: str) -> tuple[str | None, bool]:
        """An article's own comment settings: (mode or None for the default, closed)."""
        row = self._exec(
            conn,
            "SELECT mode, closed FROM article_comment_settings"
            f" WHERE language = {self.param} AND article_id = {self.param}",
            (language, article_id),
        ).fetchone()
        return (None, False) if row is None else (row[0], bool(row[1]))

    def _comment(self, row: tuple[Any, ...]) -> Comment:
        return Comment(
            id=row[0],
            article_id=row[1],
            language=row[2],
            parent_id=row[3],
            author=row[4],
            content=row[5],
            created_at=self._ts_out(row[6]),
            featured=bool(row[7]),
            edited_at=None if row[8] is None else self._ts_out(row[8]),
        )

    def _stored(self, row: tuple[Any, ...]) -> Stored:
        """A row of STORED columns."""
        mod = None
        if row[13] is not None:
            mod = Mod(
                reason=row[11],
                automated=bool(row[12]),
                at=self._ts_out(row[13]),
                moderator=row[14],
                note=row[15],
                explanation=row[16],
            )
        return Stored(self._comment(row[:9]), row[9], mod, row[10])

    def _set_mod(self, conn: Any, comment_id: str, status: str, mod: Mod | None) -> None:
        p = self.param
        self._exec(
            conn,
            f"UPDATE comments SET status = {p}, mod_reason = {p}, mod_automated = {p},"
            f" mod_at = {p}, mod_moderator = {p}, mod_note = {p}, mod_explanation = {p}"
            f" WHERE id = {p}",
            (
                status,
                *(
                    (None,) * 6
                    if mod is None
                    else (
                        mod.reason,
                        mod.automated,
                        self._ts_in(mod.at),
                        mod.moderator,
                        mod.note,
                        mod.explanation,
                    )
                ),
                comment_id,
            ),
        )

    def _log(
        self,
        conn: Any,
        stored: Stored,
        action: str,
        before: str | None,
        after: str,
        at: datetime,
        *,
        reason: str | None = None,
        note: str | None = None,
        moderator: str | None = None,
        automated: bool = True,
        notice_id: str | None = None,
    ) -> None:
        """One moderation log entry: called last in its transaction (see _lock_log)."""
        self._lock_log(conn)
        comment = stored.comment
        self._exec(
            conn,
            "INSERT INTO moderation_log (language, at, action, comment_id, article_id,"
            " from_status, to_status, reason, note, moderator, automated, notice_id)"
            f" VALUES ({self._marks(12)})",
            (
                comment.language,
                self._ts_in(at),
                action,
                comment.id,
                comment.article_id,
                before,
                after,
                reason,
                note,
                moderator,
                automated,
                notice_id,
            ),
        )

    def _check_rate(self, conn: Any, client_key: bytes, rate: RateLimit, now: float) -> None:
        """Sliding window: at most `rate.count` accepted events in any `rate.seconds`."""
        # Expired events are only counted out here; _sweep deletes them once a minute.
        since = now - rate.seconds
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
