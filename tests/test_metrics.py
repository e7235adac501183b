"""GET /metrics: Prometheus text with bounded labels; under gunicorn, summed over workers."""

from __future__ import annotations

import json
import os
import signal
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import falcon
import pytest
from falcon.testing import TestClient
from prometheus_client import REGISTRY, generate_latest
from prometheus_client.parser import text_string_to_metric_families

from app.metrics import Metrics
from app.response_cache import App, ResponseCache
from tests.server import Server

Samples = dict[tuple[str, tuple[tuple[str, str], ...]], float]


def parse(text: str) -> Samples:
    return {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for family in text_string_to_metric_families(text)
        for s in family.samples
    }


def value(samples: Samples, name: str, **labels: str) -> float:
    return samples.get((name, tuple(sorted(labels.items()))), 0.0)


ARTICLES = "/api/v1/{language}/articles"


def test_requests_counted_by_route_template_and_status(client: TestClient) -> None:
    # The counters are process-wide and the apps of earlier tests flush their last requests
    # up to FLUSH_SECONDS later: let that happen before the first reading.
    time.sleep(Metrics.FLUSH_SECONDS * 1.5)
    before = parse(client.simulate_get("/metrics").text)
    client.simulate_get("/api/v1/en/articles")
    client.simulate_get("/api/v1/ko/articles")  # another path, the same route
    client.simulate_get("/api/v1/xx/articles")  # 400
    for n in range(3):  # unknown paths share one label, however many there are
        client.simulate_get(f"/no/such/path/{n}")
    result = client.simulate_get("/metrics")
    assert result.status_code == 200
    assert result.headers["content-type"].startswith("text/plain; version=")
    after = parse(result.text)

    def delta(name: str, **labels: str) -> float:
        return value(after, name, **labels) - value(before, name, **labels)

    total = "news_http_requests_total"
    assert delta(total, route=ARTICLES, method="GET", status="200") == 2
    assert delta(total, route=ARTICLES, method="GET", status="400") == 1
    assert delta(total, route="unmatched", method="GET", status="404") == 3
    hist = "news_http_request_duration_seconds"
    assert delta(f"{hist}_count", route=ARTICLES, method="GET") == 3
    assert delta(f"{hist}_bucket", route=ARTICLES, method="GET", le="+Inf") == 3
    routes = {dict(labels).get("route") for (name, labels) in after if name == total}
    assert not any(r and r.startswith("/no/") for r in routes)


def test_answers_from_the_response_cache_are_counted_too(client: TestClient) -> None:
    """The response cache answers repeats before Falcon routes them (app/response_cache.py):
    each one still counts once, under the route it was kept from."""
    time.sleep(Metrics.FLUSH_SECONDS * 1.5)
    before = parse(client.simulate_get("/metrics").text)
    latest = "/api/v1/fr/articles/latest"
    for _ in range(5):
        assert client.simulate_get(latest, query_string="limit=3").status_code == 200
        assert client.simulate_head(latest, query_string="limit=3").status_code == 200
    after = parse(client.simulate_get("/metrics").text)
    route = "/api/v1/{language}/articles/latest"
    for method in ("GET", "HEAD"):
        labels = {"route": route, "method": method}
        total = "news_http_requests_total"
        counted = value(after, total, **labels, status="200")
        assert counted - value(before, total, **labels, status="200") == 5
        hist = "news_http_request_duration_seconds_count"
        assert value(after, hist, **labels) - value(before, hist, **labels) == 5


class _Bundle:
    def __init__(self, bundle_id: str) -> None:
        self.bundle_id = bundle_id
        self.damage: tuple[str, ...] = ()


class _Store:
    def __init__(self) -> None:
        self.bundle = _Bundle("first")
        self.on_swap: list[Callable[[Any], None]] = []

    def current(self) -> _Bundle:
        return self.bundle


class _Sized:
    """An answer of `size` bytes, kept (its route's rule); counts the requests that reach it."""

    calls = 0

    def on_get(self, req: falcon.Request, resp: falcon.Response, size: int) -> None:
        self.calls += 1
        resp.data = b"x" * size

    on_head = on_get


def test_every_answer_of_the_response_cache_is_counted_and_timed() -> None:
    """Hits log their seconds on the list of their labels (Metrics.answer_log): none is lost
    when its entry is evicted or the bundle changes, and the histogram puts each in its
    bucket."""
    store = _Store()
    metrics = Metrics(store)  # type: ignore[arg-type]
    cache = ResponseCache(store, metrics, max_bytes=16_000, max_entries=2)  # type: ignore[arg-type]
    app = App(cache, middleware=[metrics])
    sized = _Sized()
    route = "/counted/{size:int}"
    app.add_route(route, sized)
    app.keep_answers(sized, True)
    client = TestClient(app)
    metrics.flush()
    before = parse(generate_latest(REGISTRY).decode())
    sent = 0
    for round_ in range(3):
        for size in (1, 2, 3):  # three answers, room for two: each round evicts
            for _ in range(4):  # the first two reach the resource, the rest are hits
                assert client.simulate_get(f"/counted/{size}").status_code == 200
                assert client.simulate_head(f"/counted/{size}").status_code == 200
                sent += 1
        if round_ == 1:
            store.bundle = _Bundle("second")  # empties the cache
    assert 2 * sent - sized.calls > sent  # most of the GETs and HEADs were hits
    slow = 0.003  # a hit that waited 3 ms (a busy worker): bucket le=0.005
    metrics.answer_log(route, "GET", 200).append(slow)
    metrics.flush()
    after = parse(generate_latest(REGISTRY).decode())

    def delta(name: str, **labels: str) -> float:
        return value(after, name, **labels) - value(before, name, **labels)

    hist = "news_http_request_duration_seconds"
    for method, extra in (("GET", 1), ("HEAD", 0)):
        count = sent + extra
        assert delta("news_http_requests_total", route=route, method=method, status="200") == count
        assert delta(f"{hist}_count", route=route, method=method) == count
        assert delta(f"{hist}_bucket", route=route, method=method, le="+Inf") == count
        assert delta(f"{hist}_bucket", route=route, method=method, le="0.005") == count
        assert delta(f"{hist}_bucket", route=route, method=method, le="0.0025") == sent
    assert slow < delta(f"{hist}_sum", route=route, method="GET") < slow + 0.001 * sent


def test_bundle_id_and_age(client: TestClient, bundle: tuple[Path, str]) -> None:
    client.simulate_get("/health")
    samples = parse(client.simulate_get("/metrics").text)
    assert value(samples, "news_bundle_info", bundle=bundle[1]) == 1
    assert ("news_bundle_age_seconds", ()) in samples
    assert 0 <= value(samples, "news_bundle_age_seconds") < 3600


@pytest.mark.e2e
def test_gunicorn_workers_are_summed_and_access_log_is_json(
    bundle: tuple[Path, str], tmp_path: Path
) -> None:
    metrics_dir = tmp_path / "metrics"
    metrics_dir.mkdir()
    (metrics_dir / "counter_999999.db").write_bytes(b"left by an earlier run")
    env = {"PROMETHEUS_MULTIPROC_DIR": str(metrics_dir), "NEWS_ACCESS_LOG": "-"}
    with Server(tmp_path, bundle[0], workers=2, env=env) as server:
        assert not (metrics_dir / "counter_999999.db").exists()  # cleaned at start
        requests = 40  # one connection each: both workers answer some of them
        for _ in range(requests):
            assert server.get("/api/v1/en/articles/latest").status == 200

        def counted() -> float:
            samples = parse(server.get("/metrics").body.decode())
            return value(
                samples,
                "news_http_requests_total",
                route="/api/v1/{language}/articles/latest",
                method="GET",
                status="200",
            )

        # Each worker adds its tallies within a second; then every scrape, whichever
        # worker answers it, gives the same sum.
        deadline = time.monotonic() + 5
        while counted() != requests and time.monotonic() < deadline:
            time.sleep(0.2)
        assert [counted() for _ in range(4)] == [requests] * 4
        samples = parse(server.get("/metrics").body.decode())
        assert value(samples, "news_bundle_info", bundle=bundle[1]) == 1
        loaded = value(samples, "news_bundle_loaded_timestamp_seconds")
        assert time.time() - 60 < loaded <= time.time()
        assert 0 <= value(samples, "news_bundle_age_seconds") < 60
        lines = [line for line in server.log_text().splitlines() if line.startswith("{")]
        records = [json.loads(line) for line in lines]
        latest = [r for r in records if r["path"] == "/api/v1/en/articles/latest"]
        assert len(latest) == requests
        assert {r["status"] for r in latest} == {200}
        assert all(r["method"] == "GET" and r["duration_ms"] >= 0 for r in latest)


@pytest.mark.e2e
def test_a_killed_workers_gauges_are_dropped(bundle: tuple[Path, str], tmp_path: Path) -> None:
    metrics_dir = tmp_path / "metrics"
    env = {"PROMETHEUS_MULTIPROC_DIR": str(metrics_dir)}
    with Server(tmp_path, bundle[0], workers=2, env=env) as server:
        victim = server.worker_pids()[0]

        def victim_has_gauges() -> bool:  # a worker writes its bundle gauges when it serves
            assert server.get("/health").status == 200
            return any(metrics_dir.glob(f"gauge_live*_{victim}.db"))

        assert wait_for(victim_has_gauges)
        os.kill(victim, signal.SIGKILL)
        # gunicorn replaces the worker, and child_exit drops the dead one's live gauges.
        assert wait_for(
            lambda: len(server.worker_pids()) == 2 and victim not in server.worker_pids()
        )
        assert wait_for(lambda: not any(metrics_dir.glob(f"gauge_live*_{victim}.db")))
        samples = parse(server.get("/metrics").body.decode())
        assert value(samples, "news_bundle_info", bundle=bundle[1]) == 1


def wait_for(check: Callable[[], bool], timeout: float = 10) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if check():
            return True
        time.sleep(0.1)
    return False
