"""Interactive API documentation at /docs: Swagger UI over /openapi.json.

Swagger UI's files come from the npm package `swagger-ui-dist`, pinned in package.json and
installed into node_modules/ by `make serve` (`npm ci --omit=dev`) or `make install`; the
service serves them itself, so the page loads nothing from another host (its
Content-Security-Policy says so).
"""

from __future__ import annotations

from pathlib import Path

import falcon

from app.config import PROJECT_ROOT
from app.errors import APIError
from app.resources.assets import PageAssets

HERE = Path(__file__).with_name("docs_static")
SWAGGER_UI = PROJECT_ROOT / "node_modules" / "swagger-ui-dist"
# Only these files are served: the page needs nothing else from the package.
_ASSETS = {
    "swagger-ui.css": (SWAGGER_UI, "text/css; charset=utf-8"),
    "swagger-ui-bundle.js": (SWAGGER_UI, "text/javascript; charset=utf-8"),
    "favicon-32x32.png": (SWAGGER_UI, "image/png"),
    "init.js": (HERE, "text/javascript; charset=utf-8"),
}
_CSP = (
    "default-src 'none'; script-src 'self'; style-src 'self' 'unsafe-inline';"
    " img-src 'self' data:; connect-src 'self'; font-src 'self'"
)
_MAX_AGE = 3600


def _read(name: str) -> bytes:
    directory, _ = _ASSETS[name]
    try:
        return (directory / name).read_bytes()
    except FileNotFoundError:
        raise APIError(
            503, "API documentation assets are not installed: run `make install` (npm ci)"
        ) from None


class DocsPage:
    """GET /docs"""

    def __init__(self) -> None:
        self.page = (HERE / "index.html").read_bytes()

    def on_get(self, req: falcon.Request, resp: falcon.Response) -> None:
        resp.content_type = "text/html; charset=utf-8"
        resp.set_header("Content-Security-Policy", _CSP)
        resp.data = self.page


def docs_assets() -> PageAssets:
    """GET /docs/{asset}: Swagger UI's files."""
    return PageAssets({name: kind for name, (_, kind) in _ASSETS.items()}, _read, _MAX_AGE)
