"""Whole responses that repeat, answered before routing (docs/architecture.md, "Serving").

Readers ask for the same few pages over and over (front pages, latest, popular articles,
categories). A response sent by `app.delivery.send` depends only on the bundle it was read
from, the request target and `Accept-Encoding`, so once it has been sent it can be sent
again as it was: status, headers and body. A hit costs a dictionary lookup and the headers'
copy, not a route, a parameter check, a lookup in the bundle and a join of slices.

What is kept, and when:
- only an answer asked for a second time (the keys of answers sent once are remembered, at
  most four times `max_entries` of them);
- only responses that `send` marks as repeatable (`mark_repeatable`): a page sent composed
  from pieces the first time is not, because its second answer is compressed whole
  (app.whole_pages), and must stay so;
- only GET and HEAD requests without `If-None-Match` or `If-Modified-Since` are answered
  from it (a conditional request goes the whole way, to its 304);
- per process, at most `max_bytes` of bodies (NEWS_RESPONSE_CACHE_BYTES) and `max_entries`
  responses; when full, the oldest entries go first;
- for one `Bundle` object: a publish, or damage found on disk (app.bundle.store), swaps the
  object, and the first request after the swap empties the cache.
"""

from __future__ import annotations

import threading
from typing import Any

import falcon

from app.bundle.reader import Bundle
from app.bundle.store import BundleStore

_METHODS = frozenset({"GET", "HEAD"})
_REPEATABLE = "repeatable_response"
_BUNDLE = "response_cache_bundle"


def mark_repeatable(req: falcon.Request) -> None:
    """Called by `app.delivery.send` when its answer is the same for every request with the
    same target and Accept-Encoding, as long as the bundle is."""
    req.context[_REPEATABLE] = True


class _Entry:
    __slots__ = ("body", "headers", "route", "status")

    def __init__(self, status: int, headers: dict[str, str], body: bytes, route: str) -> None:
        self.status = status
        self.headers = headers
        self.body = body
        self.route = route


class ResponseCache:
    """Falcon middleware, right after the metrics' (which time every request): its
    `process_request` answers a hit and marks the response complete (Falcon then skips
    routing, the other middleware's `process_request` and the responder, and runs every
    `process_response` as usual: metrics count the hit under its route); its
    `process_response` keeps a repeatable answer with every header the others set."""

    def __init__(
        self, store: BundleStore, max_bytes: int = 128 << 20, max_entries: int = 16384
    ) -> None:
        self.store = store
        self.max_bytes = max_bytes
        self.max_entries = max_entries
        self._bundle: Bundle | None = None
        self._entries: dict[tuple[str, str, str, str | None], _Entry] = {}
        # Answered once. Not app.whole_pages' set of pages asked for once: that one is keyed
        # by a page's identity ETag (every coding and spelling of its query), known only
        # inside the resource, and must stay so for the bytes a page's second answer has;
        # this one by the exact request, known before routing, and is filled only by
        # answers marked repeatable (a page from its second answer on).
        self._seen: set[tuple[str, str, str, str | None]] = set()
        self._size = 0
        self._lock = threading.Lock()
        self.hits = 0  # tests and benchmarks

    @staticmethod
    def _key(env: dict[str, Any]) -> tuple[str, str, str, str | None] | None:
        method = env["REQUEST_METHOD"]
        if method not in _METHODS or "HTTP_IF_NONE_MATCH" in env or "HTTP_IF_MODIFIED_SINCE" in env:
            return None
        return (
            method,
            env.get("PATH_INFO", ""),
            env.get("QUERY_STRING", ""),
            env.get("HTTP_ACCEPT_ENCODING"),
        )

    def process_request(self, req: falcon.Request, resp: falcon.Response) -> None:
        key = self._key(req.env)
        if key is None:
            return
        bundle = self.store.current()
        if self._bundle is bundle:
            entry = self._entries.get(key)
            if entry is not None:
                self.hits += 1
                resp.status = entry.status
                resp.data = entry.body
                resp.set_headers(entry.headers)
                req.uri_template = entry.route  # metrics count it under its route
                resp.complete = True
                return
        req.context[_BUNDLE] = bundle  # what the answer will be read from, at the latest

    def process_response(
        self, req: falcon.Request, resp: falcon.Response, resource: Any, req_succeeded: bool
    ) -> None:
        if not req_succeeded or resp.complete or not req.context.get(_REPEATABLE):
            return
        bundle = req.context.get(_BUNDLE)
        body = resp.data
        # The store swaps bundles one way: if the one seen before routing is still current,
        # the resource read this answer from it.
        if bundle is None or bundle is not self.store.current() or body is None:
            return
        key = self._key(req.env)
        size = len(body)
        if key is None or req.uri_template is None or size > self.max_bytes // 16:
            return  # (a few large bodies must not push out many small ones)
        with self._lock:
            if self._bundle is not bundle:
                self._bundle = bundle
                self._entries = {}
                self._seen = set()
                self._size = 0
            if key not in self._seen:
                # Kept from its second answer on: a long tail of distinct requests (the cold
                # figure in docs/benchmarks.md) pays a set insertion, not a copy of its body.
                if len(self._seen) >= 4 * self.max_entries:
                    self._seen.clear()
                self._seen.add(key)
                return
            entry = _Entry(resp.status_code, resp.headers, bytes(body), req.uri_template)
            old = self._entries.pop(key, None)
            if old is not None:
                self._size -= len(old.body)
            self._entries[key] = entry
            self._size += size
            while self._size > self.max_bytes or len(self._entries) > self.max_entries:
                oldest = next(iter(self._entries))
                self._size -= len(self._entries.pop(oldest).body)

    @property
    def size(self) -> int:
        return self._size
