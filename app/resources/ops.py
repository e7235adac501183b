"""Operational endpoints: /health, /ready, /openapi.json (API contract, section 5)."""

from __future__ import annotations

from collections.abc import Callable

import falcon
import orjson

from app.bundle.store import BundleStore
from app.http_cache import no_store

_HEALTHY = orjson.dumps({"status": "ok"})


class Health:
    """Liveness: the process answers."""

    def on_get(self, req: falcon.Request, resp: falcon.Response) -> None:
        no_store(resp)
        resp.data = _HEALTHY

    on_head = on_get


class Ready:
    """Readiness: a bundle is loaded and the comment store answers."""

    def __init__(self, store: BundleStore, comments_problem: Callable[[], str | None]) -> None:
        self.store = store
        self.comments_problem = comments_problem

    def on_get(self, req: falcon.Request, resp: falcon.Response) -> None:
        no_store(resp)
        bundle = self.store.current()
        problem = self.comments_problem()
        if problem is not None:
            resp.status = falcon.HTTP_503
            resp.data = orjson.dumps({"detail": f"Comment store unavailable: {problem}"})
            return
        resp.data = orjson.dumps({"status": "ready", "bundle": bundle.bundle_id})

    on_head = on_get


class OpenAPI:
    def __init__(self, document: bytes) -> None:
        self.document = document

    def on_get(self, req: falcon.Request, resp: falcon.Response) -> None:
        resp.data = self.document

    on_head = on_get
