"""Shared helpers for the comment tests: the article stub, PostgreSQL access, requests."""

from __future__ import annotations

import itertools
import os
import socket
from collections.abc import Callable
from typing import Any

import falcon.testing
import psycopg
import pytest

from app.comments import CommentService

PG_HOST, PG_PORT = "127.0.0.1", 5432
PG_ADMIN_DSN = f"postgresql://postgres@{PG_HOST}:{PG_PORT}/postgres"
ADMIN_TOKEN = "test-admin-token"

ARTICLES = frozenset(
    {
        ("en", "a1"),
        ("en", "a2"),
        ("en", "a3"),
        ("en", "with space"),
        ("fr", "a1"),
        ("ko", "경제-1"),
    }
)


def article_exists(language: str, article_id: str) -> bool:
    return (language, article_id) in ARTICLES


def require_postgres() -> None:
    """Skip when PostgreSQL is unreachable, except under CI, which must prove these tests."""
    try:
        socket.create_connection((PG_HOST, PG_PORT), timeout=2).close()
    except OSError as error:
        message = f"PostgreSQL is not reachable on {PG_HOST}:{PG_PORT} ({error})"
        if os.environ.get("CI"):
            pytest.fail(message + "; CI must run the PostgreSQL tests")
        pytest.skip(message)


def pg_admin(sql: str) -> None:
    with psycopg.connect(PG_ADMIN_DSN, autocommit=True, connect_timeout=5) as conn:
        conn.execute(sql)


def pg_dsn(name: str) -> str:
    return f"postgresql://postgres@{PG_HOST}:{PG_PORT}/{name}"


_SERIAL = itertools.count(1)


class Client(falcon.testing.TestClient):
    service: CommentService


MakeClient = Callable[..., Client]


def post(
    client: falcon.testing.TestClient,
    body: Any = None,
    *,
    path: str = "/api/v1/en/articles/a1/comments",
    **kwargs: Any,
) -> falcon.testing.Result:
    if body is None:
        # A new text each time: the same text from one client within ten minutes is a
        # duplicate (409, docs/moderation.md rule 2). A retry with an Idempotency-Key sends
        # the same text again.
        key = (kwargs.get("headers") or {}).get("Idempotency-Key")
        body = {"author": "Ann", "content": f"Hello {key or next(_SERIAL)}"}
    return client.simulate_post(path, json=body, **kwargs)


# What only the 201 of a create carries (docs/api.md §12): the rest is the public Comment.
CREATE_ONLY = ("status", "moderation", "author_token")


def public(created: dict[str, Any]) -> dict[str, Any]:
    """The Comment a reader gets for the comment a create answered with."""
    return {key: value for key, value in created.items() if key not in CREATE_ONLY}
