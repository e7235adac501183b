"""ETag / If-None-Match / Cache-Control for article and category responses."""

from __future__ import annotations

from dataclasses import dataclass, field

import falcon


@dataclass(frozen=True, slots=True)
class CachePolicy:
    """Cache-Control of cacheable responses (NEWS_CACHE_MAX_AGE, NEWS_CACHE_STALE_*)."""

    max_age: int
    stale_while_revalidate: int = 60
    stale_if_error: int = 86400
    # The header's value, written once: every cacheable answer sends it.
    header: str = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(
            self,
            "header",
            f"public, max-age={self.max_age}, "
            f"stale-while-revalidate={self.stale_while_revalidate}, "
            f"stale-if-error={self.stale_if_error}",
        )


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
