"""Operational endpoints: /health, /ready, /openapi.json (docs/api.md §5).

/health and /ready are declared `no-store` in app/routes.py: app.mount sets the header.
"""

from __future__ import annotations

from collections.abc import Callable

import falcon
import orjson

from app.bundle.store import BundleStore

_HEALTHY = orjson.dumps({"status": "ok"})


class Health:
    """Liveness: the process answers."""

    def on_get(self, req: falcon.Request, resp: falcon.Response) -> None:
        resp.data = _HEALTHY


class Ready:
    """Readiness: the bundle is loaded whole (no object found damaged on disk) and the
    comment store answers."""

    def __init__(self, store: BundleStore, comments_problem: Callable[[], str | None]) -> None:
        self.store = store
        self.comments_problem = comments_problem

    def on_get(self, req: falcon.Request, resp: falcon.Response) -> None:
        bundle = self.store.current()
        damage = self.store.damage_report()
        if damage is not None:
            resp.status = falcon.HTTP_503
            resp.data = orjson.dumps({"detail": f"Bundle damaged: {damage}"})
            return
        problem = self.comments_problem()
        if problem is not None:
            resp.status = falcon.HTTP_503
            resp.data = orjson.dumps({"detail": f"Comment store unavailable: {problem}"})
            return
        body = {"status": "ready", "bundle": bundle.bundle_id}
        if self.store.rejection is not None:
            # Still ready (the old bundle serves), but the operator must see the refusal.
            body["rejected_bundle"] = self.store.rejection
        resp.data = orjson.dumps(body)


class OpenAPI:
    def __init__(self, document: bytes) -> None:
        self.document = document

    def on_get(self, req: falcon.Request, resp: falcon.Response) -> None:
        resp.data = self.document
