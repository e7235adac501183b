"""Versioned schema for the comment store, one statement list per SQL dialect.

Migrations only ever get appended; an applied version is never edited. The runner
(`SQLStore._migrate`) first reads, without any lock, whether every version is applied
(the usual case: each worker's first request after start); only otherwise does it apply
the missing versions in one transaction while holding a lock every instance contends for,
so instances starting at once apply each version exactly once.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

Dialect = Literal["sqlite", "postgres"]

SCHEMA_TABLE = {
    "sqlite": (
        "CREATE TABLE IF NOT EXISTS schema_migrations ("
        " version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at TEXT NOT NULL)"
    ),
    "postgres": (
        "CREATE TABLE IF NOT EXISTS schema_migrations ("
        " version integer PRIMARY KEY, name text NOT NULL, applied_at timestamptz NOT NULL)"
    ),
}

# Whether schema_migrations exists, asked of the catalogue so the query never fails.
SCHEMA_TABLE_EXISTS = {
    "sqlite": (
        "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = 'schema_migrations'"
    ),
    "postgres": "SELECT count(*) FROM (SELECT to_regclass('schema_migrations') AS t) s"
    " WHERE t IS NOT NULL",
}


@dataclass(frozen=True)
class Migration:
    version: int
    name: str
    statements: dict[Dialect, tuple[str, ...]]


_COMMENTS = """CREATE TABLE comments (
    id              {text} PRIMARY KEY,
    language        {text} NOT NULL,
    article_id      {text} NOT NULL,
    parent_id       {text},
    author          {text} NOT NULL,
    content         {text} NOT NULL,
    created_at      {ts} NOT NULL,
    -- Deletion wipes author and content but keeps the row, so a retried
    -- Idempotency-Key cannot re-create a comment an administrator removed.
    deleted_at      {ts},
    idempotency_key {text},
    request_hash    {text} NOT NULL
)"""

_COMMON_INDEXES = (
    # Serves list (both orders), count and the batch counts; deleted rows are left out.
    "CREATE INDEX comments_visible ON comments (language, article_id, created_at, id)"
    " WHERE deleted_at IS NULL",
    # Makes racing creates with one Idempotency-Key collide instead of both inserting.
    "CREATE UNIQUE INDEX comments_idempotency ON comments (language, article_id, idempotency_key)"
    " WHERE idempotency_key IS NOT NULL",
)

_RATE = """CREATE TABLE comment_rate_events (
    client_key {blob} NOT NULL,  -- HMAC-SHA256 of the client address, never the address
    at         {real} NOT NULL   -- Unix time of an accepted create
)"""

_RATE_INDEXES = (
    "CREATE INDEX comment_rate_events_client ON comment_rate_events (client_key, at)",
    "CREATE INDEX comment_rate_events_at ON comment_rate_events (at)",
)

_SECRETS = "CREATE TABLE comment_secrets (name {text} PRIMARY KEY, value {blob} NOT NULL)"

_TYPES: dict[Dialect, dict[str, str]] = {
    "sqlite": {"text": "TEXT", "ts": "TEXT", "blob": "BLOB", "real": "REAL"},
    "postgres": {"text": "text", "ts": "timestamptz", "blob": "bytea", "real": "double precision"},
}


def _both(*templates: str) -> dict[Dialect, tuple[str, ...]]:
    return {
        dialect: tuple(t.format(**types) for t in templates) for dialect, types in _TYPES.items()
    }


MIGRATIONS: tuple[Migration, ...] = (
    Migration(1, "comments", _both(_COMMENTS, *_COMMON_INDEXES)),
    Migration(2, "rate limit and secrets", _both(_RATE, *_RATE_INDEXES, _SECRETS)),
)

# Name of the comment_secrets row holding the HMAC key for client addresses.
RATE_KEY_SECRET = "rate_limit_hmac_key"
