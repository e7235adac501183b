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
    "sqlite": {
        "text": "TEXT",
        "ts": "TEXT",
        "blob": "BLOB",
        "real": "REAL",
        "bool": "INTEGER",
        "false": "0",
        "serial": "INTEGER PRIMARY KEY AUTOINCREMENT",
    },
    "postgres": {
        "text": "text",
        "ts": "timestamptz",
        "blob": "bytea",
        "real": "double precision",
        "bool": "boolean",
        "false": "false",
        "serial": "bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY",
    },
}


def _both(*templates: str) -> dict[Dialect, tuple[str, ...]]:
    return {
        dialect: tuple(t.format(**types) for t in templates) for dialect, types in _TYPES.items()
    }


# Version 3: moderation (docs/moderation.md). Every comment gets a status; a comment stored
# before it is `visible` with no author, one deleted before it `erased`. The last rule or
# decision that set its status is kept on the row (mod_*), the history in moderation_log.
_MODERATION_COLUMNS = tuple(
    f"ALTER TABLE comments ADD COLUMN {column}"
    for column in (
        "status {text} NOT NULL DEFAULT 'visible'",
        "featured {bool} NOT NULL DEFAULT {false}",
        "edited_at {ts}",
        "author_id {text}",  # a random id; the author's token is derived from it (authors.py)
        "client_key {blob}",  # HMAC of the client, for the duplicate rule; never the address
        "mod_reason {text}",
        "mod_automated {bool}",
        "mod_at {ts}",
        "mod_moderator {text}",
        "mod_note {text}",
        "mod_explanation {text}",
    )
)

_MODERATION_INDEXES = (
    "UPDATE comments SET status = 'erased' WHERE deleted_at IS NOT NULL",
    "DROP INDEX comments_visible",
    # What readers see (list, count, batch counts), as comments_visible served before.
    "CREATE INDEX comments_public ON comments (language, article_id, created_at, id)"
    " WHERE status = 'visible'",
    # The queues: one status of one language, oldest or newest first.
    "CREATE INDEX comments_queue ON comments (language, status, created_at, id)",
    # The duplicate rule looks at one article's last ten minutes, whatever the status.
    "CREATE INDEX comments_recent ON comments (language, article_id, created_at)",
    "CREATE INDEX comments_author ON comments (author_id, created_at) WHERE author_id IS NOT NULL",
)

_REPORTS = """CREATE TABLE comment_reports (
    id         {serial},
    comment_id {text} NOT NULL,
    language   {text} NOT NULL,
    client_key {blob} NOT NULL,  -- HMAC of the reporting client, never its address
    reason     {text} NOT NULL,
    text       {text},
    at         {ts} NOT NULL,
    cleared    {bool} NOT NULL DEFAULT {false}  -- set by the comment's next decision
)"""

_REPORT_INDEXES = (
    # One client's repeated reports of one comment count once until the next decision.
    "CREATE UNIQUE INDEX comment_reports_open ON comment_reports (comment_id, client_key)"
    " WHERE NOT cleared",
    "CREATE INDEX comment_reports_comment ON comment_reports (comment_id)",
    "CREATE INDEX comment_reports_at ON comment_reports (language, at)",
)

_NOTICES = """CREATE TABLE comment_notices (
    id                   {text} PRIMARY KEY,
    comment_id           {text} NOT NULL,
    language             {text} NOT NULL,
    article_id           {text} NOT NULL,
    explanation          {text} NOT NULL,
    law                  {text},
    notifier_name        {text},
    notifier_email       {text},
    access_digest        {blob} NOT NULL,  -- SHA-256 of the notifier's access token
    received_at          {ts} NOT NULL,
    status               {text} NOT NULL DEFAULT 'received',
    decided_at           {ts},
    outcome              {text},
    grounds              {text},
    decision_explanation {text},
    moderator            {text}
)"""

_NOTICE_INDEXES = (
    "CREATE INDEX comment_notices_comment ON comment_notices (comment_id, received_at)",
    "CREATE INDEX comment_notices_received ON comment_notices (language, received_at)",
    "CREATE INDEX comment_notices_decided ON comment_notices (language, decided_at)",
)

_LOG = """CREATE TABLE moderation_log (
    id          {serial},
    language    {text} NOT NULL,
    at          {ts} NOT NULL,
    action      {text} NOT NULL,
    comment_id  {text} NOT NULL,
    article_id  {text} NOT NULL,
    from_status {text},
    to_status   {text} NOT NULL,
    reason      {text},
    note        {text},
    moderator   {text},
    automated   {bool} NOT NULL,
    notice_id   {text}
)"""

_LOG_INDEXES = (
    "CREATE INDEX moderation_log_language ON moderation_log (language, id)",
    "CREATE INDEX moderation_log_at ON moderation_log (language, at)",
)

_SETTINGS = """CREATE TABLE article_comment_settings (
    language   {text} NOT NULL,
    article_id {text} NOT NULL,
    mode       {text},
    closed     {bool} NOT NULL DEFAULT {false},
    PRIMARY KEY (language, article_id)
)"""

MIGRATIONS: tuple[Migration, ...] = (
    Migration(1, "comments", _both(_COMMENTS, *_COMMON_INDEXES)),
    Migration(2, "rate limit and secrets", _both(_RATE, *_RATE_INDEXES, _SECRETS)),
    Migration(
        3,
        "moderation",
        _both(
            *_MODERATION_COLUMNS,
            *_MODERATION_INDEXES,
            _REPORTS,
            *_REPORT_INDEXES,
            _NOTICES,
            *_NOTICE_INDEXES,
            _LOG,
            *_LOG_INDEXES,
            _SETTINGS,
        ),
    ),
)

# Name of the comment_secrets row holding the HMAC key for client addresses.
RATE_KEY_SECRET = "rate_limit_hmac_key"
# ...and of the one from which author tokens are derived when NEWS_AUTHOR_SECRET is unset.
AUTHOR_KEY_SECRET = "author_token_hmac_key"
