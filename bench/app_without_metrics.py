"""The app as app.wsgi builds it, less its metrics (the Metrics middleware, and the count of
the answers the response cache sends): the other side of bench/metrics_cost.py.
`app_without_metrics:app` for a server, `without_metrics(create_app())` in process. Every
other middleware, route and setting is the app's own."""

from __future__ import annotations

from typing import Any

import falcon

from app.metrics import Metrics
from app.wsgi import create_app


def without_metrics(app: falcon.App) -> falcon.App:
    """`app` with its metrics taken out (in place)."""
    # Falcon prepares its middleware in App() and again in each add_middleware(); taking
    # Metrics out of the list it keeps and preparing again gives the app create_app() would
    # build without it (the /metrics route stays, and nothing requests it).
    kept = [m for m in app._unprepared_middleware if not isinstance(m, Metrics)]
    if len(kept) == len(app._unprepared_middleware):
        raise RuntimeError("the app has no Metrics middleware to take out")
    app._unprepared_middleware = kept
    app.add_middleware([])
    # The response cache answers repeats before Falcon (app/response_cache.py) and counts
    # each in the metrics itself.
    cache = getattr(app, "_response_cache", None)
    if cache is not None:
        cache.metrics = None
    return app


def __getattr__(name: str) -> Any:
    if name != "app":
        raise AttributeError(name)
    application = without_metrics(create_app())
    globals()["app"] = application
    return application
