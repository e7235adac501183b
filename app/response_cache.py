"""Whole responses that repeat, answered before Falcon sees the request (docs/architecture.md,
"Serving").

Readers ask for the same few pages over and over (front pages, latest, popular articles,
categories). A response sent by `app.delivery.send` depends only on the bundle it was read
from, the request target and `Accept-Encoding`, so once it has been sent it can be sent
again as it was: the status line, the header list and the body the WSGI server got. A hit
costs a dictionary lookup and a copy of the header list: no Falcon request or response
object, no middleware, no route, no parameter check, no lookup in the bundle.

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

A hit is still counted by the metrics, under the route it was kept from: it appends its
seconds to the list `Metrics.answer_log` gave the entry for its labels, which the metrics'
flusher reads (app/metrics.py).
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from time import perf_counter
from typing import TYPE_CHECKING, Any

import falcon

if TYPE_CHECKING:
    from app.bundle.reader import Bundle
    from app.bundle.store import BundleStore
    from app.metrics import Metrics

_METHODS = frozenset({"GET", "HEAD"})
# Set in the WSGI environ by `mark_repeatable`: the route template the answer came from.
_REPEATABLE = "news.repeatable_route"

Key = tuple[str, str, str, str | None]
StartResponse = Callable[..., Any]


def mark_repeatable(req: falcon.Request) -> None:
    """Called by `app.delivery.send` when its answer is the same for every request with the
    same target and Accept-Encoding, as long as the bundle is."""
    req.env[_REPEATABLE] = req.uri_template


class _Entry:
    __slots__ = ("body", "headers", "log", "status")

    def __init__(
        self,
        status: str,
        headers: list[tuple[str, str]],
        body: bytes,
        log: list[float] | None,  # Metrics.answer_log of its labels; None without metrics
    ) -> None:
        self.status = status
        self.headers = headers
        self.body = body
        self.log = log


class ResponseCache:
    """The kept answers of one process, for `App`."""

    def __init__(
        self,
        store: BundleStore,
        metrics: Metrics | None = None,
        max_bytes: int = 128 << 20,
        max_entries: int = 16384,
    ) -> None:
        self.store = store
        self.metrics = metrics
        self.max_bytes = max_bytes
        self.max_entries = max_entries
        self._bundle: Bundle | None = None
        self._entries: dict[Key, _Entry] = {}
        # Answered once. Not app.whole_pages' set of pages asked for once: that one is keyed
        # by a page's identity ETag (every coding and spelling of its query), known only
        # inside the resource, and must stay so for the bytes a page's second answer has;
        # this one by the exact request, known before routing, and is filled only by
        # answers marked repeatable (a page from its second answer on).
        self._seen: set[Key] = set()
        self._size = 0
        self._lock = threading.Lock()

    @staticmethod
    def _key(env: dict[str, Any]) -> Key | None:
        method = env["REQUEST_METHOD"]
        if method not in _METHODS or "HTTP_IF_NONE_MATCH" in env or "HTTP_IF_MODIFIED_SINCE" in env:
            return None
        return (
            method,
            env.get("PATH_INFO", ""),
            env.get("QUERY_STRING", ""),
            env.get("HTTP_ACCEPT_ENCODING"),
        )

    def __call__(
        self, env: dict[str, Any], start_response: StartResponse, app: Callable[..., Any]
    ) -> Any:
        """Answer from the cache, or through `app` (Falcon), keeping what may repeat."""
        started = perf_counter()
        key = self._key(env)
        if key is None:
            return app(env, start_response)
        bundle = self.store.current()  # what the answer will be read from, at the latest
        if self._bundle is bundle:
            entry = self._entries.get(key)
            if entry is not None:
                start_response(entry.status, list(entry.headers))
                if entry.log is not None:
                    entry.log.append(perf_counter() - started)
                return [entry.body]
        sent: list[Any] = []

        def capture(status: str, headers: list[tuple[str, str]], exc_info: Any = None) -> Any:
            sent[:] = status, headers
            return start_response(status, headers, exc_info)

        result = app(env, capture)
        route = env.get(_REPEATABLE)
        if route is not None and sent and isinstance(result, list):
            self._keep(key, bundle, sent[0], sent[1], result, route)
        return result

    def _keep(
        self,
        key: Key,
        bundle: Bundle,
        status: str,
        headers: list[tuple[str, str]],
        chunks: list[bytes],
        route: str,
    ) -> None:
        # The store swaps bundles one way: if the one seen before routing is still current,
        # the resource read this answer from it.
        if bundle is not self.store.current():
            return
        body = chunks[0] if len(chunks) == 1 else b"".join(chunks)
        size = len(body)
        if size > self.max_bytes // 16:
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
            metrics = self.metrics  # (its lock is never held while it takes this one)
            log = None if metrics is None else metrics.answer_log(route, key[0], int(status[:3]))
            entry = _Entry(status, list(headers), bytes(body), log)
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


class App(falcon.App):
    """The service's Falcon app, with a response cache in front of it when one is given."""

    def __init__(self, cache: ResponseCache | None = None, **options: Any) -> None:
        super().__init__(**options)
        self._response_cache = cache

    def __call__(self, env: dict[str, Any], start_response: StartResponse) -> Any:
        cache = self._response_cache
        if cache is None:
            return super().__call__(env, start_response)
        return cache(env, start_response, super().__call__)
