"""The framework's ceiling: a minimal Falcon app that answers every route of the real API with one
fixed, pre-serialised article. Served by the same server and worker count as ``app.wsgi:app``,
its throughput is the most the real app could reach with Falcon on that server.

    gunicorn --pythonpath bench ceiling_app:app
"""

from __future__ import annotations

import random

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


def create_app() -> falcon.App:
    app = falcon.App()
    fixed = Fixed()
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
