"""Comments: the service's only writes, kept in SQLite or a shared PostgreSQL database.

The app factory calls `create_comment_service` once (possibly in gunicorn's master,
with preload_app); nothing here connects to the database until a worker serves its
first comment request or readiness check.
"""

from __future__ import annotations

from pathlib import Path

from app.comments.auth import ArticleFacts, Articles, Context
from app.comments.model import StoreUnavailable
from app.comments.sql import SQLStore
from app.config import ConfigError, Settings

__all__ = [
    "ArticleFacts",
    "Articles",
    "CommentService",
    "CommentStore",
    "create_comment_service",
    "open_store",
]

CommentStore = SQLStore


class CommentService:
    def __init__(self, settings: Settings, store: CommentStore, articles: Articles) -> None:
        self.store = store
        # What every comment resource is made with (app/routes.py declares them).
        self.context = Context(settings, store, articles)

    def ready_problem(self) -> str | None:
        try:
            self.store.ping()
        except StoreUnavailable as error:
            return str(error)  # the first line of the driver's message
        return None

    def close(self) -> None:
        self.store.close()


def open_store(dsn: str, pg_pool_size: int = Settings.pg_pool_size) -> CommentStore:
    """`sqlite:///relative/path`, `sqlite:////absolute/path` or `postgresql://...`."""
    if dsn.startswith("sqlite:///") and len(dsn) > len("sqlite:///"):
        from app.comments.sqlite import SQLiteStore

        return SQLiteStore(Path(dsn.removeprefix("sqlite:///")))
    if dsn.startswith(("postgresql://", "postgres://")):
        from app.comments.postgres import PostgresStore

        try:
            return PostgresStore(dsn, max_size=pg_pool_size)
        except Exception as error:  # psycopg.ProgrammingError: unparsable conninfo
            raise ConfigError(f"NEWS_COMMENTS_DSN is not a valid PostgreSQL DSN: {error}") from None
    raise ConfigError("NEWS_COMMENTS_DSN must start with sqlite:/// or postgresql://")


def create_comment_service(settings: Settings, articles: Articles) -> CommentService:
    return CommentService(
        settings, open_store(settings.comments_dsn, settings.pg_pool_size), articles
    )
