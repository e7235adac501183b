"""Prometheus metrics: `GET /metrics` and the middleware that feeds it.

Under gunicorn every worker is a process of its own, so the values live in per-process
files under `PROMETHEUS_MULTIPROC_DIR` (prometheus_client's multiprocess mode) and a scrape
of any worker adds up all of them. app/gunicorn_conf.py sets that directory up (empty at
each start) before the app is imported, and marks a dead worker's files as dead. Without
the variable (tests, one-process servers) the process's own registry is served. Request
counts and latencies reach the shared files within a second (see `Metrics`).

Labels are bounded: `route` is the Falcon route template (`/api/v1/{language}/articles`),
never the raw path, and every path no route matches counts as `unmatched`; `method` is one
of the methods the API answers, anything else `other`. Details: docs/operations.md.
"""

from __future__ import annotations

import bisect
import os
import threading
import time
import weakref
from collections import defaultdict
from collections.abc import Iterator
from time import perf_counter
from typing import TYPE_CHECKING, Any

import falcon
from falcon import http_status_to_code
from prometheus_client import (
    CONTENT_TYPE_LATEST,
    REGISTRY,
    CollectorRegistry,
    Counter,
    Gauge,
    Histogram,
    generate_latest,
)
from prometheus_client.core import GaugeMetricFamily, Metric
from prometheus_client.multiprocess import MultiProcessCollector

if TYPE_CHECKING:
    from app.bundle.store import BundleStore

UNMATCHED = "unmatched"
_METHODS = frozenset({"GET", "HEAD", "POST", "DELETE", "OPTIONS"})
# Most answers take well under 10 ms; the top buckets catch comment writes waiting on the
# database and requests queued behind a busy worker.
_LATENCY_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 10.0)

REQUESTS = Counter("news_http_requests", "HTTP requests answered", ("route", "method", "status"))
LATENCY = Histogram(
    "news_http_request_duration_seconds",
    "Time from routing to the response, by route",
    ("route", "method"),
    buckets=_LATENCY_BUCKETS,
)
# 1 for each bundle id some live worker serves: two ids at once mean a switch in progress.
BUNDLE_INFO = Gauge(
    "news_bundle_info", "Bundle served by the workers", ("bundle",), multiprocess_mode="livemax"
)
# When a live worker last switched bundles (unix time); the age is derived at scrape. Max,
# not min: the master, which serves nothing, holds a 0 here.
BUNDLE_LOADED = Gauge(
    "news_bundle_loaded_timestamp_seconds",
    "When the last live worker to switch bundles started serving its current one",
    multiprocess_mode="livemax",
)
# Objects of the served bundle a live worker found damaged on disk (docs/operations.md,
# "Damaged bundle files"): above 0, /ready answers 503 on that worker.
BUNDLE_DAMAGED = Gauge(
    "news_bundle_damaged_objects",
    "Files of the served bundle found damaged on disk and not served, per worker (max)",
    multiprocess_mode="livemax",
)
COMMENT_STORE_ERRORS = Counter(
    "news_comment_store_errors",
    "Comment operations that failed because the comment store was unavailable",
    ("reason",),
)


class Metrics:
    """Falcon middleware: counts and times every request, and tracks the served bundle.

    Every answer appends its seconds to the list of its labels (route, method, status) in
    its worker; a thread of each worker takes each list's new values in one slice, summed and
    bucketed in C, adds them to the shared metric files once every FLUSH_SECONDS, and notes
    the bundle the worker serves (a scrape does both first for its own worker). Updating the
    files on every request cost about 9% more server CPU per request (docs/operations.md,
    "Observing"); counting in a dictionary under a lock still cost the in-process request
    about 10% (docs/benchmarks.md, "Metrics cost"); a queue of one record per request,
    tallied one record at a time in Python by the flusher, cost the flusher about 0.75 µs a
    request (docs/benchmarks.md, "Counting instructions").

    A request Falcon answered finds its list by its raw facts (route template, bounded
    method, status as Falcon holds it: one dictionary lookup); an answer app.response_cache
    sends before Falcon sees the request was given its list when the answer was kept
    (`answer_log`).
    """

    FLUSH_SECONDS = 1.0

    def __init__(self, store: BundleStore) -> None:
        self.store = store
        store.on_swap.append(lambda bundle: BUNDLE_DAMAGED.set(len(bundle.damage)))
        self._bundle_id: str | None = None
        # (route, method, status) -> seconds of each answer with those labels, oldest first.
        # Made under _lock and kept for the life of the process, so that an answer evicted
        # from the response cache loses none of its counts. list.append and the flush's
        # slice and del are each atomic: request threads append, flush() alone deletes.
        self._answered: dict[tuple[str, str, int], list[float]] = {}
        # The same lists by a request's raw facts (uri_template, bounded method, resp.status
        # as Falcon holds it: an int or a status line), so that a request finds its list with
        # one lookup. Bounded like the labels: templates are the routes', methods are
        # bounded before the lookup, statuses are the app's own.
        self._by_facts: dict[tuple[str | None, str, Any], list[float]] = {}
        self._lock = threading.Lock()  # one flush at a time; never taken by a request
        self._flusher: threading.Thread | None = None
        # Threads do not survive fork: each gunicorn worker starts its own flusher.
        this = weakref.ref(self)
        os.register_at_fork(after_in_child=lambda: _after_fork(this))

    def process_request(self, req: falcon.Request, resp: falcon.Response) -> None:
        req.context.metrics_start = perf_counter()

    def process_response(
        self, req: falcon.Request, resp: falcon.Response, resource: Any, req_succeeded: bool
    ) -> None:
        method = req.method
        facts = (req.uri_template, method if method in _METHODS else "other", resp.status)
        log = self._by_facts.get(facts)
        if log is None:
            template, bounded, status = facts
            log = self.answer_log(template or UNMATCHED, bounded, http_status_to_code(status))
            self._by_facts[facts] = log
        log.append(perf_counter() - req.context.metrics_start)

    def answer_log(self, route: str, method: str, status: int) -> list[float]:
        """The list of the seconds of each answer with these labels: each append is one
        request counted. app.response_cache appends to it for the answers it sends before
        Falcon sees the request."""
        key = (route, method if method in _METHODS else "other", status)
        log = self._answered.get(key)
        if log is None:
            with self._lock:
                log = self._answered.setdefault(key, [])
        if self._flusher is None:
            self._start_flusher()
        return log

    def track_bundle(self) -> None:
        bundle_id = self.store.current().bundle_id
        if bundle_id != self._bundle_id:
            self.bundle_changed(bundle_id)

    def flush(self) -> None:
        """Add the requests since the last flush to the shared metrics."""
        with self._lock:
            # (route, method, status) -> [count, latency sum, count per latency bucket]
            tallies: defaultdict[tuple[str, str, int], list[Any]] = defaultdict(
                lambda: [0, 0.0, [0] * (len(_LATENCY_BUCKETS) + 1)]
            )
            for key, log in self._answered.items():  # keys are added under _lock only
                n = len(log)  # what is logged now; later answers wait
                if not n:
                    continue
                times = log[:n]
                del log[:n]
                tally = tallies[key]
                tally[0] += n
                tally[1] += sum(times)
                if max(times) <= _LATENCY_BUCKETS[0]:  # as good as always: a few µs each
                    tally[2][0] += n
                else:
                    for elapsed in times:
                        tally[2][bisect.bisect_left(_LATENCY_BUCKETS, elapsed)] += 1
        for (route, method, status), (count, total, buckets) in tallies.items():
            REQUESTS.labels(route, method, str(status)).inc(count)
            histogram = LATENCY.labels(route, method)
            # prometheus_client's Histogram takes one observation at a time; these are
            # many, already bucketed. _sum and _buckets are the values observe() updates
            # (tests/test_metrics.py checks the exposed histogram against the requests).
            histogram._sum.inc(total)
            for index, n in enumerate(buckets):
                if n:
                    histogram._buckets[index].inc(n)

    def _start_flusher(self) -> None:
        with self._lock:
            if self._flusher is not None:
                return
            # Held weakly, as the bundle watcher holds its store: a dropped app is freed.
            self._flusher = threading.Thread(
                target=_flush_forever, args=(weakref.ref(self),), daemon=True
            )
        # A worker reports its bundle from its first request on, a switch within a second.
        self.track_bundle()
        self._flusher.start()

    def bundle_changed(self, bundle_id: str) -> None:
        if self._bundle_id is not None:
            BUNDLE_INFO.labels(self._bundle_id).set(0)
        BUNDLE_INFO.labels(bundle_id).set(1)
        BUNDLE_LOADED.set(time.time())
        BUNDLE_DAMAGED.set(len(self.store.current().damage))
        self._bundle_id = bundle_id


def _flush_forever(ref: weakref.ref[Metrics]) -> None:
    while True:
        time.sleep(Metrics.FLUSH_SECONDS)
        metrics = ref()
        if metrics is None:
            return
        metrics.track_bundle()
        metrics.flush()
        del metrics


def _after_fork(ref: weakref.ref[Metrics]) -> None:
    metrics = ref()
    if metrics is not None:
        metrics._lock = threading.Lock()
        for log in metrics._answered.values():
            log.clear()  # the parent's answers are the parent's to report; in place: the
            # response cache's entries hold these lists
        # A worker's first answer of each kind looks its list up again, which starts the
        # worker's own flusher (answer_log).
        metrics._by_facts = {}
        metrics._flusher = None


class _WithBundleAge:
    """Adds `news_bundle_age_seconds` (now minus the loaded timestamp) to a collector."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner

    def collect(self) -> Iterator[Metric]:
        loaded = None
        for family in self.inner.collect():
            if family.name == BUNDLE_LOADED._name:
                values = [s.value for s in family.samples if s.value > 0]
                loaded = min(values) if values else None
            yield family
        if loaded is not None:
            age = GaugeMetricFamily(
                "news_bundle_age_seconds",
                "Seconds since a live worker last switched to its current bundle",
            )
            age.add_metric([], max(0.0, time.time() - loaded))
            yield age


def scrape_registry() -> CollectorRegistry:
    registry = CollectorRegistry(auto_describe=False)
    if os.environ.get("PROMETHEUS_MULTIPROC_DIR"):
        inner: Any = MultiProcessCollector(None)
    else:
        inner = REGISTRY
    registry.register(_WithBundleAge(inner))
    return registry


class MetricsResource:
    """`GET /metrics`: the Prometheus text exposition format."""

    def __init__(self, metrics: Metrics) -> None:
        self.metrics = metrics
        self.registry = scrape_registry()

    def on_get(self, req: falcon.Request, resp: falcon.Response) -> None:
        # This worker's figures are exact (the others' are at most a second old), and it
        # reports its bundle even when this scrape is the first request it serves.
        self.metrics.track_bundle()
        self.metrics.flush()
        resp.content_type = CONTENT_TYPE_LATEST  # no-store: declared in app/routes.py
        resp.data = generate_latest(self.registry)
