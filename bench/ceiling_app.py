"""The framework's ceiling: a minimal Falcon app that answers every route of the real API with one
fixed, pre-serialised article. Served by the same server and worker count as ``app.wsgi:app``,
its throughput is the most the real app could reach with Falcon on that server.

    gunicorn --pythonpath bench ceiling_app:app

With ``CEILING_SAME_BYTES=DIR`` (the real app's answers saved as nginx serves them:
bench/harness/nginx.py), it answers each URL with the real app's body for that URL instead,
looked up in a dict: Falcon's cost for the same bytes, so that a gap to the real app is the
app's own work and not the size of its answers.
"""

from __future__ import annotations

import os
import random
from pathlib import Path

import falcon
import gen_corpus
import orjson

# An ordinary English article from the benchmark corpus generator (~3.5 KB of JSON).
_rng = random.Random("ceiling")
_ARTICLE = gen_corpus.article(
    _rng, "en", gen_corpus.vocab_for("en", 4096), 1, "en-1", gen_corpus.CATEGORIES["en"]
)
_ARTICLE.setdefault("author", None)
_ARTICLE.setdefault("image_url", None)
_ARTICLE.setdefault("updated_at", _ARTICLE["published_at"])
BODY = orjson.dumps(_ARTICLE)
ETAG = '"ceiling-1"'


class Fixed:
    """Same headers as the real article responses (ETag, Cache-Control), no work per request."""

    def on_get(self, req: falcon.Request, resp: falcon.Response, **_params: str) -> None:
        resp.data = BODY
        resp.content_type = falcon.MEDIA_JSON
        resp.etag = ETAG
        resp.cache_control = ("public", "max-age=60")


class SameBytes:
    """The real app's saved body for the request's URL; headers as `Fixed`."""

    def __init__(self, root: Path) -> None:
        self.bodies: dict[str, bytes] = {}
        for file in root.rglob("_*"):
            # nginx's layout: "/$uri/_$args", $uri percent-decoded, $args raw.
            path = "/" + file.parent.relative_to(root).as_posix()
            query = file.name[1:]
            self.bodies[path + (f"?{query}" if query else "")] = file.read_bytes()

    def on_get(self, req: falcon.Request, resp: falcon.Response, **_params: str) -> None:
        query = req.query_string
        # /health and /ready (not saved) get the fixed body.
        resp.data = self.bodies.get(req.path + (f"?{query}" if query else ""), BODY)
        resp.content_type = falcon.MEDIA_JSON
        resp.etag = ETAG
        resp.cache_control = ("public", "max-age=60")


def create_app() -> falcon.App:
    app = falcon.App()
    same_bytes = os.environ.get("CEILING_SAME_BYTES")
    fixed = SameBytes(Path(same_bytes)) if same_bytes else Fixed()
    # The real API's routes, so that routing costs what it costs in the real app.
    for route in (
        "/api/v1/{language}/articles",
        "/api/v1/{language}/articles/latest",
        "/api/v1/{language}/articles/search",
        "/api/v1/{language}/articles/{article_id}",
        "/api/v1/{language}/categories",
        "/health",
        "/ready",
    ):
        app.add_route(route, fixed)
    return app


app = create_app()
