"""The moderator's page at /moderation: a desk over the section 12 moderation API.

Three files of the service's own (moderation_static/: index.html, moderation.js,
moderation.css), served as /docs serves its assets: the page itself uncached, its assets
with an ETag and a short max-age. The page loads nothing from another host and runs no
inline script or style; its Content-Security-Policy says so, and a browser enforces it
even where a comment's text would reach the document as markup (it never does:
moderation.js inserts every text with `textContent`). The moderator's token stays in the
page (memory or sessionStorage), never in a URL or a cookie, so the page needs none of
the service's cookies and sets none.
"""

from __future__ import annotations

from pathlib import Path

import falcon

from app.resources.assets import PageAssets

HERE = Path(__file__).with_name("moderation_static")
_ASSETS = {
    "moderation.js": "text/javascript; charset=utf-8",
    "moderation.css": "text/css; charset=utf-8",
}
# Only the page's own files, only from this origin; no frames, forms posting elsewhere or
# <base> tricks. `connect-src 'self'`: the API calls go to this service alone.
CSP = (
    "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self';"
    " img-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
)
_MAX_AGE = 300


def _page_headers(resp: falcon.Response) -> None:
    resp.set_header("Content-Security-Policy", CSP)
    # The page holds a moderator's token: no other site may frame it or learn its URL.
    resp.set_header("X-Frame-Options", "DENY")
    resp.set_header("Referrer-Policy", "no-referrer")


class ModerationPage:
    """GET /moderation: the page itself, never stored by a cache (it holds no data, but a
    stale page against a newer API would be worse than a fresh fetch)."""

    def __init__(self) -> None:
        self.page = (HERE / "index.html").read_bytes()

    def on_get(self, req: falcon.Request, resp: falcon.Response) -> None:
        resp.content_type = "text/html; charset=utf-8"
        resp.set_header("Cache-Control", "no-store")
        _page_headers(resp)
        resp.data = self.page


def moderation_assets() -> PageAssets:
    """GET /moderation/{asset}: the page's script and style sheet."""
    return PageAssets(_ASSETS, lambda name: (HERE / name).read_bytes(), _MAX_AGE)
