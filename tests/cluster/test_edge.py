"""The edge (docs/api.md §10, version 1.2): a real Varnish in front of nginx and real
instances. It caches per coding, revalidates, purges exactly the keys a publish names, and
keeps answering from cache within stale-if-error when every instance is down.

Its own cluster (two instances, max-age 3 s and stale-while-revalidate 1 s, so that "stale"
comes within a test's time); the tests run in file order and the last one stops the
instances.
"""

from __future__ import annotations

import http.client
import json
import shutil
import time
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import quote

import pytest

from cluster.edge import VARNISHD
from cluster.runtime import Cluster, stop_process
from tests.cluster.conftest import require, server_port
from tests.http_support import decode_body
from tests.reliability.harness import SAMPLE_SRC


def get(port: int, path: str, **headers: str) -> tuple[int, dict[str, str], bytes]:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    try:
        conn.request("GET", path, headers={k.replace("_", "-"): v for k, v in headers.items()})
        resp = conn.getresponse()
        return resp.status, {k.lower(): v for k, v in resp.getheaders()}, resp.read()
    finally:
        conn.close()


@pytest.fixture(scope="module")
def edged(database: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    require(shutil.which("nginx") is not None, "nginx is not installed (apt-get install nginx)")
    require(Path(VARNISHD).exists(), "varnishd is not installed (apt-get install varnish)")
    runtime = tmp_path_factory.mktemp("edge-cluster")
    src = runtime / "src"
    shutil.copytree(SAMPLE_SRC, src)
    cluster = Cluster(
        runtime,
        instances=2,
        port=server_port(),
        instance_ports=[server_port() for _ in range(2)],
        dsn=f"postgresql://postgres@127.0.0.1:5432/{database}",
        env={
            "NEWS_BUNDLE_CHECK_INTERVAL": "0.2",
            "NEWS_CACHE_MAX_AGE": "3",
            "NEWS_CACHE_STALE_WHILE_REVALIDATE": "1",
        },
        edge_port=server_port(),
    )
    cluster.start(src)
    try:
        yield cluster
    finally:
        cluster.stop()


def test_cached_per_coding_with_x_cache(edged: Cluster) -> None:
    port = edged.edge_port
    assert port is not None
    path = "/api/v1/ko/articles?page_size=5"
    status, _, identity = get(port, path)
    assert status == 200
    for coding in ("zstd", "br", "gzip", None):
        headers = {"Accept-Encoding": coding} if coding else {}
        first = get(port, path, **headers)
        second = get(port, path, **headers)
        assert second[1]["x-cache"] == "HIT", coding
        assert first[1].get("content-encoding") == coding
        assert decode_body(coding, second[2]) == identity
        assert second[1]["vary"] == "Accept-Encoding"
    # Browsers' headers share the variant of the coding they get.
    chrome = get(port, path, Accept_Encoding="gzip, deflate, br, zstd")
    assert chrome[1]["x-cache"] == "HIT" and chrome[1]["content-encoding"] == "zstd"
    safari = get(port, path, Accept_Encoding="gzip, deflate, br")
    assert safari[1]["x-cache"] == "HIT" and safari[1]["content-encoding"] == "br"
    # The edge answers If-None-Match itself.
    tag = chrome[1]["etag"]
    status, headers, body = get(port, path, Accept_Encoding="zstd", If_None_Match=tag)
    assert status == 304 and body == b"" and headers["x-cache"] == "HIT"
    # Never cached: what the service marks no-store, and codings it cannot send.
    assert get(port, "/health")[1]["x-cache"] == "MISS"
    assert get(port, "/health")[1]["x-cache"] == "MISS"
    refused = get(port, path, Accept_Encoding="compress, identity;q=0")
    assert refused[0] == 406 and refused[1]["x-cache"] == "MISS"


def test_stale_while_revalidate_then_refreshed(edged: Cluster) -> None:
    port = edged.edge_port
    assert port is not None
    path = "/api/v1/fr/articles/latest?limit=3"
    get(port, path)
    assert get(port, path)[1]["x-cache"] == "HIT"
    time.sleep(3.3)  # past max-age, within stale-while-revalidate: stale, then refreshed
    assert get(port, path)[1]["x-cache"] == "HIT"
    time.sleep(4.5)  # past both while the service answers: fetched again
    assert get(port, path)[1]["x-cache"] == "MISS"


def test_publish_purges_exactly_the_named_keys(edged: Cluster) -> None:
    port = edged.edge_port
    assert port is not None
    src = edged.runtime / "src"
    lines = (src / "en.jsonl").read_text().splitlines()
    record = json.loads(lines[0])
    article = f"/api/v1/en/articles/{quote(record['id'], safe='')}"
    untouched = "/api/v1/ja/categories"
    old_title = record["title"]
    get(port, article)
    assert get(port, article)[1]["x-cache"] == "HIT"
    record["title"] = old_title + " (corrected)"
    record["updated_at"] = "2026-11-24T09:00:00Z"
    lines[0] = json.dumps(record, ensure_ascii=False)
    (src / "en.jsonl").write_text("\n".join(lines) + "\n")

    # Clients keep reading through the edge while the rollout runs; none may see the old
    # title more than 2 s after publish returns.
    steps: list[str] = []

    def step(message: str) -> None:
        steps.append(message)
        if len(steps) == 1 + len(edged.members):  # every instance serves the new bundle
            get(port, untouched)  # cached now: only a purge of its keys would drop it

    edged.publish(src, log=step)
    returned = time.monotonic()
    assert get(port, untouched)[1]["x-cache"] == "HIT"  # its keys were not purged
    keys = edged.purge_keys_path.read_text().split()
    assert "list-en" in keys and any(k.startswith("art-") for k in keys)
    assert not any(k.endswith("-ja") for k in keys)
    last_old = None
    while time.monotonic() < returned + 3:
        status, _, body = get(port, article)
        assert status == 200
        if json.loads(body)["title"] == old_title:
            last_old = time.monotonic() - returned
    assert last_old is None or last_old <= 2.0, last_old
    assert json.loads(get(port, article)[2])["title"] == old_title + " (corrected)"
    assert steps[-1].startswith("edge: purged")


def test_stale_if_error_when_every_instance_is_down(edged: Cluster) -> None:
    port = edged.edge_port
    assert port is not None
    cached = ["/api/v1/de/articles?page_size=3", "/sitemap.xml", "/api/v1/it/feed.atom"]
    bodies = {}
    for path in cached:
        get(port, path, Accept_Encoding="zstd")
        bodies[path] = get(port, path, Accept_Encoding="zstd")
        assert bodies[path][1]["x-cache"] == "HIT"
    for member in edged.members:
        assert member.pid is not None
        stop_process(member.pid, b"gunicorn", 15, group=True)
        member.pid = None
    time.sleep(5)  # past max-age + stale-while-revalidate, and the edge's probe says sick
    assert get(edged.port, "/ready")[0] == 502  # nginx has nothing behind it
    for path in cached:
        status, headers, body = get(port, path, Accept_Encoding="zstd")
        assert status == 200 and headers["x-cache"] == "HIT", path
        assert body == bodies[path][2]
    assert get(port, "/api/v1/de/articles?page_size=4", Accept_Encoding="zstd")[0] >= 500
