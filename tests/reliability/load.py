"""A sustained mixed load on loopback: a Python threaded client (no wrk needed, so CI runs it
too). Reads of every kind plus a share of comment writes; measures errors, and RSS / open
fds / connections of the master and each worker at start and end.
"""

from __future__ import annotations

import contextlib
import itertools
import random
import threading
import time
from collections import Counter
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import quote

from tests.reliability.harness import Server, fd_count, rss_kib, sample_article_ids


@dataclass
class Snapshot:
    rss_kib: dict[int, int]
    fds: dict[int, int]
    connections: int


@dataclass
class LoadResult:
    seconds: float
    requests: int
    writes: int
    errors: Counter[str] = field(default_factory=Counter)
    start: Snapshot | None = None
    end: Snapshot | None = None

    @property
    def error_count(self) -> int:
        return sum(self.errors.values())

    def as_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["errors"] = dict(self.errors)
        data["requests_per_second"] = round(self.requests / self.seconds)
        return data


def snapshot(server: Server) -> Snapshot:
    pids = [server.pid, *server.worker_pids()]
    return Snapshot(
        {pid: rss_kib(pid) for pid in pids},
        {pid: fd_count(pid) for pid in pids},
        server.connections(),
    )


def _read_paths(bundle_dir: Path) -> list[str]:
    ids = sample_article_ids(bundle_dir)
    paths = [
        "/api/v1/en/articles?page=1&page_size=20",
        "/api/v1/ko/articles?page=2&page_size=5",
        "/api/v1/ja/articles/latest?limit=10",
        "/api/v1/fr/categories",
        "/api/v1/en/articles/search?q=economy",
        "/api/v1/de/articles/search?q=wirtschaft&page_size=5",
        "/api/v1/zh_cn/articles/search?q=%E7%BB%8F%E6%B5%8E",
        "/api/v1/en/comments/counts?" + "&".join(f"article_id={quote(i)}" for i in ids[:5]),
        "/health",
    ]
    for article_id in ids[:5]:
        paths.append(f"/api/v1/en/articles/{quote(article_id, safe='')}")
        paths.append(f"/api/v1/en/articles/{quote(article_id, safe='')}/comments?page_size=10")
    return paths


def run_load(
    server: Server,
    seconds: float,
    *,
    threads: int = 8,
    write_share: float = 0.05,
    warmup: float = 2.0,
) -> LoadResult:
    paths = _read_paths(server.bundle_dir)
    articles = sample_article_ids(server.bundle_dir)[:5]
    lock = threading.Lock()
    errors: Counter[str] = Counter()
    counts = {"requests": 0, "writes": 0}
    stop = threading.Event()
    measuring = threading.Event()

    def client(seed: int) -> None:
        rng = random.Random(seed)
        requests = writes = 0
        sent = itertools.count()  # every write a new text: a repeated one is a 409
        local: Counter[str] = Counter()
        while not stop.is_set():
            write = rng.random() < write_share
            try:
                if write:
                    reply = server.post_comment(
                        "en", rng.choice(articles), f"load {seed} {next(sent)}"
                    )
                    ok = reply.status == 201
                else:
                    reply = server.request("GET", rng.choice(paths), timeout=10)
                    ok = reply.status == 200
                if not ok:
                    local[f"status {reply.status}"] += 1
            except OSError as exc:
                local[type(exc).__name__] += 1
            if measuring.is_set():
                requests += 1
                writes += write
        with lock:
            counts["requests"] += requests
            counts["writes"] += writes
            errors.update(local)

    workers = [threading.Thread(target=client, args=(n,)) for n in range(threads)]
    for t in workers:
        t.start()
    try:
        time.sleep(warmup)  # imports, first connections, page cache: not growth
        start = snapshot(server)
        measuring.set()
        began = time.monotonic()
        time.sleep(seconds)
        elapsed = time.monotonic() - began
    finally:
        stop.set()
        for t in workers:
            t.join(30)
    time.sleep(0.5)  # let the last connections close
    with contextlib.suppress(OSError):
        end = snapshot(server)
    return LoadResult(elapsed, counts["requests"], counts["writes"], errors, start, end)


def growth_problems(
    result: LoadResult, rss_growth_kib: int = 16 * 1024, fd_growth: int = 4
) -> list[str]:
    """What in the start/end figures looks like a leak."""
    assert result.start is not None and result.end is not None
    problems = []
    for pid, before in result.start.rss_kib.items():
        after = result.end.rss_kib.get(pid)
        if after is None:
            problems.append(f"process {pid} is gone")
        elif after - before > rss_growth_kib:
            problems.append(f"RSS of {pid} grew {before} -> {after} KiB")
    for pid, before in result.start.fds.items():
        after = result.end.fds.get(pid, before)
        if after - before > fd_growth:
            problems.append(f"open fds of {pid} grew {before} -> {after}")
    if result.end.connections > result.start.connections + 2:
        problems.append(f"connections grew {result.start.connections} -> {result.end.connections}")
    return problems
