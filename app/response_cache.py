"""The one cache of finished responses: answers that repeat, sent again before Falcon sees
the request (docs/architecture.md, "Serving").

Readers ask for the same few pages over and over (front pages, latest, popular articles,
categories). An answer of a route whose declaration says its answers may be kept
(app/routes.py, `Route.keep`) depends only on the bundle it was read from, the request
target and the negotiated coding (docs/delivery.md, "One answer per page and coding"), so
once sent it can be sent again as it was: the status line, the header list and the body the
WSGI server got. A hit costs a dictionary lookup and a copy of the header list: no Falcon
request or response object, no middleware, no route, no parameter check, no lookup in the
bundle, no compression.

What is kept, and when:
- the 200 and 410 answers of the routes whose declaration keeps them; `App` learns the
  route from Falcon's routing (`_get_responder`), where the declaration was attached by
  app.mount, so no responder has to say anything;
- from an answer's second request on: the keys of answers sent once are remembered (at
  most four times `max_entries` of them, forgotten all at once when full), so that a long
  tail of distinct requests pays a set insertion, not a place in the cache (keeping every
  first answer made the cold mix of docs/benchmarks.md 20% dearer); the answer is the same
  either way;
- only GET and HEAD requests without `If-None-Match` or `If-Modified-Since` are answered
  from it (a conditional request goes the whole way, to its 304);
- per process, at most `max_bytes` of bodies (NEWS_RESPONSE_CACHE_BYTES) and `max_entries`
  answers, least recently used out first, no body over a sixteenth of the budget
  (app.bounded, the block every cache of the server is made of);
- for one `Bundle` object: a publish, or damage found on disk (app.bundle.store), swaps the
  object, and the first answer kept after the swap empties the cache.

A hit is still counted by the metrics, under the route it was kept from: it appends its
seconds to the list `Metrics.answer_log` gave the entry for its labels, which the metrics'
flusher reads (app/metrics.py).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping
from time import perf_counter
from typing import TYPE_CHECKING, Any

import falcon

from app.bounded import Bounded

if TYPE_CHECKING:
    from app.bundle.reader import Bundle
    from app.bundle.store import BundleStore
    from app.metrics import Metrics

_METHODS = frozenset({"GET", "HEAD"})
# The statuses an answer that may be kept is sent with: a representation (200) or a
# retracted article's notice (410). Errors are cheap, and a flood of them is not kept.
_KEPT_STATUSES = frozenset({"200", "410"})
# Set in the WSGI environ by `App._get_responder` when the route's declaration keeps this
# answer: the route template (the metrics' label).
_KEPT_ROUTE = "news.kept_route"
# A body larger than this share of the budget is sent but not kept.
SHARE = 16

Key = tuple[str, str, str, str | None]
StartResponse = Callable[..., Any]
# A route's keep rule, from its declaration (app.routes.Route.keep): True, False, or a test
# of the path's fields.
KeepRule = bool | Callable[[Mapping[str, str]], bool]


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
        self._bundle: Bundle | None = None
        self._answers: Bounded[Key, _Entry] = Bounded(max_bytes, max_entries, SHARE)
        self._lookup = self._answers.get
        self._seen: set[Key] = set()  # answered once (since the last bundle)
        self._max_seen = 4 * max_entries
        self._lock = threading.Lock()

    def __call__(
        self, env: dict[str, Any], start_response: StartResponse, app: Callable[..., Any]
    ) -> Any:
        """Answer from the cache, or through `app` (Falcon), keeping what its route allows."""
        started = perf_counter()
        method = env["REQUEST_METHOD"]  # the key, inline: this is the hit path
        if method not in _METHODS or "HTTP_IF_NONE_MATCH" in env or "HTTP_IF_MODIFIED_SINCE" in env:
            return app(env, start_response)
        key = (
            method,
            env.get("PATH_INFO", ""),
            env.get("QUERY_STRING", ""),
            env.get("HTTP_ACCEPT_ENCODING"),
        )
        bundle = self.store.current()  # what the answer will be read from, at the latest
        if self._bundle is bundle:
            entry = self._lookup(key)
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
        route = env.get(_KEPT_ROUTE)
        kept = sent and sent[0][:3] in _KEPT_STATUSES and isinstance(result, list)
        if route is not None and kept:
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
        if not self._answers.fits(len(body)):
            return
        with self._lock:
            if self._bundle is not bundle:
                self._answers.clear()
                self._seen.clear()
                self._bundle = bundle
            if key not in self._seen:
                if len(self._seen) >= self._max_seen:
                    self._seen.clear()  # a flood of distinct requests: start counting again
                self._seen.add(key)
                return
        metrics = self.metrics
        log = None if metrics is None else metrics.answer_log(route, key[0], int(status[:3]))
        entry = _Entry(status, list(headers), bytes(body), log)
        self._answers.put(key, entry, len(body))

    @property
    def size(self) -> int:
        return self._answers.size

    def __len__(self) -> int:
        return len(self._answers)


class App(falcon.App):
    """The service's Falcon app, with a response cache in front of it when one is given."""

    def __init__(self, cache: ResponseCache | None = None, **options: Any) -> None:
        super().__init__(**options)
        self._response_cache = cache
        self._falcon = super().__call__  # made once: not a super() object per request
        # id(resource) -> None (keep every answer) or the test of the path's fields.
        self._keep_rules: dict[int, Callable[[Mapping[str, str]], bool] | None] = {}
        if cache is None:  # nothing is kept: Falcon's own lookup, without the keep test
            self._get_responder = super()._get_responder  # type: ignore[method-assign]

    def keep_answers(self, resource: object, rule: KeepRule) -> None:
        """Let the cache keep the answers of `resource`'s route, as its declaration says
        (app.mount); without a cache, nothing is kept."""
        if self._response_cache is not None and rule is not False:
            self._keep_rules[id(resource)] = None if rule is True else rule

    def _get_responder(self, req: falcon.Request) -> Any:
        found = super()._get_responder(req)
        rules = self._keep_rules
        if rules and id(found[2]) in rules:
            test = rules[id(found[2])]
            if test is None or test(found[1]):
                req.env[_KEPT_ROUTE] = found[3]
        return found

    def __call__(self, env: dict[str, Any], start_response: StartResponse) -> Any:
        cache = self._response_cache
        if cache is None:
            return self._falcon(env, start_response)
        return cache(env, start_response, self._falcon)
