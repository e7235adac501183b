"""The WSGI application, `app.wsgi:app` (docs/api.md §6).

`create_app()` wires one request path: Falcon route -> resource -> bundle slices -> bytes.
It makes the parts every resource shares (`app.routes.Shared`) and mounts the route table
(app/routes.py, app/mount.py), which also writes /openapi.json.
`app` is created on first access, so importing this module (tests, tools) has no side
effects; gunicorn's `app.wsgi:app` triggers it, in the master when preloading.
"""

from __future__ import annotations

import logging
import sys
from typing import Any

import falcon
import orjson

from app import errors
from app.bundle.errors import BundleError
from app.bundle.store import BundleStore
from app.comments import ArticleFacts, Articles, create_comment_service
from app.config import ConfigError, Settings
from app.http_cache import CachePolicy
from app.metrics import Metrics
from app.middleware import RequestFrame
from app.mount import mount
from app.response_cache import App, ResponseCache
from app.routes import Shared
from app.timestamps import parse_timestamp

log = logging.getLogger("app")


def create_app(settings: Settings | None = None) -> falcon.App:
    settings = settings or Settings.from_env()
    store = BundleStore(settings.bundle_dir, settings.bundle_check_interval)
    comments = create_comment_service(
        settings,
        Articles(
            lambda language, article_id: store.current().has_article(language, article_id),
            lambda language, article_id: store.current().is_retracted(language, article_id),
            lambda language, article_id: article_facts(store, language, article_id),
        ),
    )

    metrics = Metrics(store)
    cache = None
    if settings.whole_page_cache_bytes is not None:
        log.warning(
            "NEWS_WHOLE_PAGE_CACHE_BYTES is deprecated: whole pages are kept by the response"
            " cache, whose budget it is added to (%d bytes in all); set"
            " NEWS_RESPONSE_CACHE_BYTES instead (docs/operations.md)",
            settings.answer_cache_bytes,
        )
    if settings.answer_cache_bytes > 0:
        # Answers that repeat go out before Falcon sees the request (app.response_cache).
        cache = ResponseCache(store, metrics, settings.answer_cache_bytes)
    # Metrics first: they time every request the cache does not answer.
    app = App(cache, middleware=[metrics, RequestFrame()])
    app.req_options.keep_blank_qs_values = True  # `page=` is a 422, `category=` no filter
    errors.install(app)

    shared = Shared(
        settings=settings,
        store=store,
        cache=CachePolicy(
            settings.cache_max_age,
            settings.cache_stale_while_revalidate,
            settings.cache_stale_if_error,
        ),
        comments=comments,
        metrics=metrics,
    )
    mount(app, shared)
    return app


def article_facts(store: BundleStore, language: str, article_id: str) -> ArticleFacts | None:
    """What comment moderation needs of an article: its title and publication time."""
    record = store.current().article_json(language, article_id)
    if record is None:
        return None
    article = orjson.loads(record)
    return ArticleFacts(article["title"], parse_timestamp(article["published_at"]))


def _configure_logging() -> None:
    if not logging.getLogger().handlers:
        logging.basicConfig(
            level=logging.INFO,
            stream=sys.stderr,
            format="%(asctime)s [%(process)d] [%(levelname)s] %(name)s: %(message)s",
        )


def __getattr__(name: str) -> Any:
    if name != "app":
        raise AttributeError(name)
    _configure_logging()
    try:
        application = create_app()
    except (BundleError, ConfigError) as exc:
        log.critical("cannot start: %s", exc)
        raise SystemExit(f"cannot start: {exc}") from None
    globals()["app"] = application
    return application
