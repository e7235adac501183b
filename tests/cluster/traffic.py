"""Clients for the cluster tests: one request from a chosen loopback address, and a bounded
background load that records every failure."""

from __future__ import annotations

import http.client
import itertools
import json
import random
import socket
import threading
import time
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import quote

from cluster.runtime import connection
from tests.http_support import Response, exchange

MAX_LOAD_SECONDS = 30.0  # a load that nobody stops ends by itself


def request(
    port: int | str,
    method: str,
    path: str,
    *,
    json_body: Any = None,
    body: bytes | None = None,
    headers: Mapping[str, str] | None = None,
    source: str = "127.0.0.1",
    timeout: float = 10.0,
) -> Response:
    """One exchange with 127.0.0.1:port from the loopback address `source` (nginx sees it as
    the client, so each address has its own rate-limit budget), or with the instance whose
    unix socket is at `port` (a path)."""
    all_headers = dict(headers or {})
    if json_body is not None:
        body = json.dumps(json_body).encode()
        all_headers.setdefault("Content-Type", "application/json")
    if isinstance(port, str):
        conn = connection(port, timeout)
        try:
            conn.request(method, path, body=body, headers=all_headers)
            resp = conn.getresponse()
            data = resp.read()
            return Response(resp.status, {k.lower(): v for k, v in resp.getheaders()}, data)
        finally:
            conn.close()
    return exchange(port, method, path, body, all_headers, timeout, source)


def open_socket(address: int | str, timeout: float = 5.0) -> socket.socket:
    """A connected socket to 127.0.0.1:address, or to the unix socket at address."""
    if isinstance(address, int):
        return socket.create_connection(("127.0.0.1", address), timeout=timeout)
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.settimeout(timeout)
    try:
        sock.connect(address)
    except BaseException:
        sock.close()
        raise
    return sock


def comments_path(article_id: str, language: str = "en") -> str:
    return f"/api/v1/{language}/articles/{quote(article_id, safe='')}/comments"


_sources = itertools.count(1)


def fresh_source() -> str:
    """A loopback address no other request of this run has used: 127.1.x.y."""
    n = next(_sources)
    return f"127.1.{n // 250 % 250}.{n % 250 + 1}"


@dataclass
class Load:
    """Threads sending requests through `port` until stopped (or MAX_LOAD_SECONDS)."""

    port: int
    paths: list[str]
    threads: int = 6
    post_to: str | None = None  # a comments path: about one request in 20 is a POST
    timeout: float = 10.0
    limit: int | None = None  # stop after this many requests in all
    max_seconds: float = MAX_LOAD_SECONDS
    sent: Counter[str] = field(default_factory=Counter)
    failures: list[str] = field(default_factory=list)
    durations: list[float] = field(default_factory=list)  # of every request, in seconds
    _stop: threading.Event = field(default_factory=threading.Event)
    _workers: list[threading.Thread] = field(default_factory=list)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def __enter__(self) -> Load:
        for n in range(self.threads):
            thread = threading.Thread(target=self._run, args=(n,), daemon=True)
            thread.start()
            self._workers.append(thread)
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self.join()

    def join(self) -> None:
        for thread in self._workers:
            thread.join(self.max_seconds + self.timeout + 5)

    def slowest(self, n: int = 5) -> list[float]:
        with self._lock:
            return sorted(self.durations)[-n:]

    def _run(self, seed: int) -> None:
        rng = random.Random(seed)
        deadline = time.monotonic() + self.max_seconds
        while not self._stop.is_set() and time.monotonic() < deadline:
            post = self.post_to is not None and rng.random() < 0.05
            started = time.monotonic()
            try:
                if post:
                    assert self.post_to is not None
                    reply = request(
                        self.port,
                        "POST",
                        self.post_to,
                        json_body={"author": "load", "content": f"load {seed}"},
                        source=fresh_source(),
                        timeout=self.timeout,
                    )
                    ok, what = reply.status == 201, "POST"
                else:
                    path = rng.choice(self.paths)
                    reply = request(self.port, "GET", path, timeout=self.timeout)
                    ok, what = reply.status == 200, f"GET {path}"
                outcome = None if ok else f"{what}: {reply.status} {reply.body[:200]!r}"
            except (OSError, http.client.HTTPException) as exc:  # refused, reset, cut short
                what = "POST" if post else "GET"
                outcome = f"{what}: {type(exc).__name__}: {exc}"
            with self._lock:
                self.durations.append(time.monotonic() - started)
                self.sent["POST" if post else "GET"] += 1
                if outcome is not None:
                    self.failures.append(outcome)
                if self.limit is not None and len(self.durations) >= self.limit:
                    self._stop.set()
