"""The forward migration to the moderation schema (version 3) on a database of the previous
version holding comments, on both engines: nothing is lost, every comment becomes `visible`
with no author, a deleted one `erased`, and every reader's answer is what it was.

The previous version's database is made with the previous version's own statements:
migrations are append-only (app/comments/migrations.py), so versions 1 and 2 of MIGRATIONS
are exactly what that release ran, and the rows are inserted with the columns it wrote.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from contextlib import closing
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import psycopg
import pytest

from app.comments.migrations import MIGRATIONS, SCHEMA_TABLE
from tests.comments.support import Client

PREVIOUS = [m for m in MIGRATIONS if m.version <= 2]
BASE = datetime(2026, 11, 20, 8, 30, tzinfo=UTC)
ROWS = [
    # id, language, article_id, parent_id, author, content, minutes, deleted
    ("01JD00000000000000000000A1", "en", "a1", None, "Ann", "First", 0, False),
    ("01JD00000000000000000000A2", "en", "a1", "01JD00000000000000000000A1", "Bo", "Re", 1, False),
    ("01JD00000000000000000000A3", "en", "a1", None, "", "", 2, True),
    ("01JD00000000000000000000K1", "ko", "경제-1", None, "민수", "좋은 기사", 3, False),
    ("01JD00000000000000000000F1", "fr", "a1", None, "Zoë", "Très bien", 4, False),
]


def _previous_version(execute: Callable[[str, tuple[Any, ...]], None], dialect: str) -> None:
    execute(SCHEMA_TABLE[dialect], ())  # type: ignore[index]
    mark = "?" if dialect == "sqlite" else "%s"
    for migration in PREVIOUS:
        for statement in migration.statements[dialect]:  # type: ignore[index]
            execute(statement, ())
        execute(
            f"INSERT INTO schema_migrations (version, name, applied_at) VALUES ({mark}, {mark},"
            f" {mark})",
            (migration.version, migration.name, _ts(BASE, dialect)),
        )
    for cid, language, article, parent, author, content, minutes, deleted in ROWS:
        at = BASE + timedelta(minutes=minutes)
        execute(
            "INSERT INTO comments (id, article_id, language, parent_id, author, content,"
            " created_at, deleted_at, idempotency_key, request_hash)"
            f" VALUES ({', '.join([mark] * 10)})",
            (
                cid,
                article,
                language,
                parent,
                author,
                content,
                _ts(at, dialect),
                _ts(at, dialect) if deleted else None,
                f"key-{cid}" if cid.endswith("1") else None,
                "hash",
            ),
        )
    execute(
        f"INSERT INTO comment_secrets (name, value) VALUES ({mark}, {mark})",
        ("rate_limit_hmac_key", b"k" * 32),
    )


def _ts(value: datetime, dialect: str) -> Any:
    if dialect == "sqlite":
        return value.strftime("%Y-%m-%dT%H:%M:%S.%fZ")
    return value


@pytest.fixture
def previous(dsn: str, tmp_path: Path) -> str:
    """`dsn`, holding a database of the previous version with comments in it."""
    if dsn.startswith("sqlite"):
        path = Path(dsn.removeprefix("sqlite:///"))
        with closing(sqlite3.connect(path, isolation_level=None)) as conn:
            _previous_version(lambda sql, params: conn.execute(sql, params), "sqlite")
    else:
        with psycopg.connect(dsn, autocommit=True) as conn:
            _previous_version(lambda sql, params: conn.execute(sql, params), "postgres")
    return dsn


def test_previous_version_migrates_without_loss(
    previous: str, make_client: Callable[..., Client]
) -> None:
    client = make_client()
    page = client.simulate_get("/api/v1/en/articles/a1/comments", params={"order": "oldest"}).json
    assert [(c["id"], c["author"], c["content"]) for c in page["items"]] == [
        ("01JD00000000000000000000A1", "Ann", "First"),
        ("01JD00000000000000000000A2", "Bo", "Re"),
    ]
    assert page["items"][1]["parent_id"] == "01JD00000000000000000000A1"
    assert all(c["featured"] is False and c["edited_at"] is None for c in page["items"])
    assert page["items"][0]["created_at"] == "2026-11-20T08:30:00.000000Z"
    ko = client.simulate_get("/api/v1/ko/articles/%EA%B2%BD%EC%A0%9C-1/comments").json
    assert [c["content"] for c in ko["items"]] == ["좋은 기사"]
    assert client.simulate_get("/api/v1/fr/articles/a1/comments/count").json["count"] == 1
    deleted = client.simulate_get("/api/v1/en/articles/a1/comments/01JD00000000000000000000A3")
    assert deleted.status_code == 404
    store = client.service.store
    rows = store._run(
        lambda conn: conn.execute(
            "SELECT id, status, author_id FROM comments ORDER BY id"
        ).fetchall()
    )
    assert [tuple(r) for r in rows] == sorted(
        (cid, "erased" if deleted else "visible", None) for cid, *_, deleted in ROWS
    )
    versions = store._run(
        lambda conn: [r[0] for r in conn.execute("SELECT version FROM schema_migrations")]
    )
    assert sorted(versions) == [m.version for m in MIGRATIONS]
    # An Idempotency-Key used before the migration stays taken (the stored fingerprint is
    # another request's here, so this is the 409 of a reused key, not a new comment).
    reused = client.simulate_post(
        "/api/v1/en/articles/a1/comments",
        json={"author": "Ann", "content": "First"},
        headers={"Idempotency-Key": "key-01JD00000000000000000000A1"},
    )
    assert reused.status_code == 409
    assert "Idempotency-Key" in reused.json["detail"]
    # The moderation log starts empty: a migration changes no status.
    assert client.simulate_get(
        "/api/v1/en/moderation/log", headers={"Authorization": "Bearer test-admin-token"}
    ).json == {"items": [], "next": None}
    # New comments work as the contract says, next to the old ones.
    created = client.simulate_post(
        "/api/v1/en/articles/a1/comments", json={"author": "Cy", "content": "New"}
    )
    assert created.status_code == 201 and created.json["status"] == "visible"
