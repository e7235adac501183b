"""SQLite backend: one machine, durable writes (WAL with synchronous=FULL)."""

from __future__ import annotations

import queue
import sqlite3
import time
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime
from pathlib import Path
from typing import Any

from app.comments.sql import SQLStore
from app.timestamps import format_timestamp, parse_timestamp

# Idle connections kept for reuse; more threads than this just open extra connections.
_IDLE_MAX = 32


class SQLiteStore(SQLStore):
    dialect = "sqlite"
    param = "?"

    # Writes take milliseconds in WAL mode (a create about 3 ms, most of it the fsync); a lock
    # held for seconds is a stuck writer, and a sync worker waiting on it serves nothing else
    # meanwhile, so give up (503) early. SQLite's busy handler is not fair: under a burst of
    # 50 writers in one process one of them can wait a second or more behind the others, so
    # the bound leaves room for that (docs/comments.md).
    def __init__(self, path: Path, busy_timeout: float = 5.0) -> None:
        super().__init__()
        self.path = path
        self.busy_timeout = busy_timeout
        self._idle: queue.LifoQueue[sqlite3.Connection] = queue.LifoQueue(maxsize=_IDLE_MAX)
        # Connections inherited across fork are parked here, never used nor closed:
        # SQLite forbids carrying a connection into a child process.
        self._abandoned: list[sqlite3.Connection] = []

    def _open(self) -> sqlite3.Connection:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        # isolation_level=None: the driver never opens transactions behind our back;
        # check_same_thread=False: connections move between threads via the idle queue,
        # never used by two threads at once.
        conn = sqlite3.connect(
            self.path, timeout=self.busy_timeout, isolation_level=None, check_same_thread=False
        )
        try:
            self._ensure_wal(conn)
            # FULL fsyncs the WAL on every commit, so a 201 survives power loss.
            conn.execute("PRAGMA synchronous=FULL")
        except BaseException:
            conn.close()
            raise
        return conn

    def _ensure_wal(self, conn: sqlite3.Connection) -> None:
        """Switch a new database to WAL; WAL is persistent, so usually only look."""
        deadline = time.monotonic() + self.busy_timeout
        mode = conn.execute("PRAGMA journal_mode").fetchone()[0]
        while mode != "wal":
            try:
                mode = conn.execute("PRAGMA journal_mode=WAL").fetchone()[0]
            except sqlite3.OperationalError as error:
                # The switch needs an exclusive lock and SQLite reports "locked" at once
                # instead of waiting when other connections race to open a fresh file.
                if "locked" not in str(error) or time.monotonic() > deadline:
                    raise
                time.sleep(0.01)
                continue
            if mode != "wal":
                raise sqlite3.OperationalError(f"cannot switch {self.path} to WAL (got {mode})")

    @contextmanager
    def _connection(self) -> Iterator[sqlite3.Connection]:
        try:
            conn = self._idle.get_nowait()
        except queue.Empty:
            conn = self._open()
        try:
            yield conn
        except BaseException as error:
            if conn.in_transaction or self._unavailable(error):
                # Possibly broken (file replaced, I/O error): the next request reopens.
                conn.close()
            else:
                self._release(conn)
            raise
        self._release(conn)

    def _release(self, conn: sqlite3.Connection) -> None:
        try:
            self._idle.put_nowait(conn)
        except queue.Full:
            conn.close()

    @contextmanager
    def _write(self, conn: sqlite3.Connection, lock_key: bytes | None) -> Iterator[None]:
        # IMMEDIATE takes the single write lock up front, so every write transaction
        # (idempotency lookup, rate count, insert) runs alone: SQLite needs no per-key lock.
        with self._transaction(conn, "BEGIN IMMEDIATE"):
            yield

    @contextmanager
    def _read(self, conn: sqlite3.Connection) -> Iterator[None]:
        with self._transaction(conn, "BEGIN"):
            yield

    def _lock_log(self, conn: sqlite3.Connection) -> None:
        """Nothing to do: a write transaction (BEGIN IMMEDIATE) already runs alone."""

    def _migration_lock(self, conn: sqlite3.Connection) -> Any:
        return self._transaction(conn, "BEGIN IMMEDIATE")

    @contextmanager
    def _transaction(self, conn: sqlite3.Connection, begin: str) -> Iterator[None]:
        conn.execute(begin)
        try:
            yield
        except BaseException:
            if conn.in_transaction:
                conn.execute("ROLLBACK")
            raise
        conn.execute("COMMIT")

    def _ts_in(self, value: datetime) -> str:
        # Fixed width, so the text sorts by time as the (created_at, id) index needs.
        return format_timestamp(value, microseconds=True)

    def _ts_out(self, value: Any) -> datetime:
        return parse_timestamp(value)

    def _unique_violation(self, error: BaseException) -> bool:
        return isinstance(error, sqlite3.IntegrityError) and "UNIQUE" in str(error)

    def _unavailable(self, error: BaseException) -> bool:
        # OperationalError: locked past busy_timeout, cannot open, disk I/O, read-only;
        # a bare DatabaseError: the file is not a database; OSError: the directory
        # cannot be created.
        return isinstance(error, sqlite3.OperationalError | OSError) or (
            type(error) is sqlite3.DatabaseError
        )

    def _reset_after_fork(self) -> None:
        while True:
            try:
                self._abandoned.append(self._idle.get_nowait())
            except queue.Empty:
                return

    def _close(self) -> None:
        while True:
            try:
                conn = self._idle.get_nowait()
            except queue.Empty:
                return
            conn.close()
