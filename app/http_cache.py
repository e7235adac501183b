"""ETag / If-None-Match / Cache-Control for article and category responses."""

from __future__ import annotations

import falcon


def etag_matches(if_none_match: str | None, etag: str) -> bool:
    """Weak comparison (RFC 9110, 13.1.2), as If-None-Match requires."""
    if not if_none_match:
        return False
    for candidate in if_none_match.split(","):
        candidate = candidate.strip()
        if candidate == "*" or candidate.removeprefix("W/") == etag:
            return True
    return False


def send_cacheable(
    req: falcon.Request, resp: falcon.Response, etag: str, max_age: int, body: bytes
) -> None:
    """Send `body` with validators, or 304 without it when the client's copy is current.

    `etag` is the quoted entity tag, e.g. '"ab12"'.
    """
    resp.set_header("ETag", etag)
    resp.set_header("Cache-Control", f"public, max-age={max_age}")
    if etag_matches(req.get_header("If-None-Match"), etag):
        resp.status = falcon.HTTP_304
        return
    resp.data = body


def no_store(resp: falcon.Response) -> None:
    resp.set_header("Cache-Control", "no-store")
