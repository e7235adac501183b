"""Fixtures: the comment routes on a bare Falcon app, over SQLite and PostgreSQL.

PostgreSQL tests use a fresh database `news_test_<random>` on 127.0.0.1:5432 (user
postgres, trust auth) and drop it afterwards. Without a reachable server they are
skipped, unless the CI environment variable is set: then they fail.
"""

from __future__ import annotations

import secrets
from collections.abc import Callable, Iterator
from dataclasses import replace
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import falcon
import pytest

from app import errors
from app.comments import Articles, CommentService, CommentStore, create_comment_service
from app.comments.auth import ArticleLookup
from app.config import Settings
from app.mount import mount
from app.routes import ROUTES
from tests.comments.support import (
    ADMIN_TOKEN,
    Client,
    MakeClient,
    article_exists,
    pg_admin,
    pg_dsn,
    require_postgres,
)


@pytest.fixture
def pg_database() -> Iterator[str]:
    """A fresh, empty PostgreSQL database; yields its name."""
    require_postgres()
    name = f"news_test_{secrets.token_hex(6)}"
    pg_admin(f'CREATE DATABASE "{name}"')
    try:
        yield name
    finally:
        pg_admin(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def dsn(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'comments.sqlite3'}"
    return pg_dsn(request.getfixturevalue("pg_database"))


@pytest.fixture
def build() -> Iterator[Callable[..., Client]]:
    """`build(dsn, store=None, facts=None, **settings_overrides)`: a client; services closed
    at the end. `facts` gives articles titles and publication times (app.comments.auth)."""
    services: list[CommentService] = []

    def make(
        dsn: str,
        store: CommentStore | None = None,
        facts: ArticleLookup | None = None,
        **overrides: Any,
    ) -> Client:
        settings = replace(
            Settings(
                comments_dsn=dsn,
                admin_token=ADMIN_TOKEN,
                comment_rate_count=10_000,
                comment_rate_seconds=60,
            ),
            **overrides,
        )
        articles = Articles(article_exists)
        if facts is not None:
            articles = replace(articles, facts=facts)
        if store is None:
            service = create_comment_service(settings, articles)
        else:
            service = CommentService(settings, store, articles)
        services.append(service)
        app = falcon.App()
        errors.install(app)
        # The comment routes need only the settings and the comment service of the shared
        # parts (app.routes.Shared).
        shared: Any = SimpleNamespace(settings=settings, comments=service)
        mount(app, shared, [route for route in ROUTES if route.tag in ("comments", "moderation")])
        client = Client(app)
        client.service = service
        return client

    yield make
    for service in services:
        service.close()


@pytest.fixture
def make_client(dsn: str, build: Callable[..., Client]) -> MakeClient:
    """A client over the parametrised test database; keywords override Settings."""
    return lambda **overrides: build(dsn, **overrides)


@pytest.fixture
def client(make_client: MakeClient) -> Client:
    return make_client()
