"""A page's own files (/docs and /moderation): a fixed set of names, each read once per
process and sent with an ETag of its bytes, 304 on If-None-Match, and a short max-age."""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Mapping

import falcon

from app.errors import APIError
from app.http_cache import send_cacheable


class PageAssets:
    """GET {page}/{asset}: `types` names the files served (name -> content type); `read`
    gives a file's bytes."""

    def __init__(
        self, types: Mapping[str, str], read: Callable[[str], bytes], max_age: int
    ) -> None:
        self._types = types
        self._read = read
        self._max_age = max_age
        self._cache: dict[str, tuple[bytes, str]] = {}

    def on_get(self, req: falcon.Request, resp: falcon.Response, asset: str) -> None:
        if asset not in self._types:
            raise APIError(404, "Not Found")
        if asset not in self._cache:
            body = self._read(asset)
            self._cache[asset] = (body, f'"{hashlib.blake2b(body, digest_size=8).hexdigest()}"')
        body, etag = self._cache[asset]
        resp.content_type = self._types[asset]
        send_cacheable(req, resp, etag, self._max_age, body)
