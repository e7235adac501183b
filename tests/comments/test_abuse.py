"""Rate limit, client addresses behind proxies, idempotency and concurrent writers."""

from __future__ import annotations

import ipaddress
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import falcon.testing
import pytest

from app.comments.clients import client_identity
from tests.comments.support import ADMIN_TOKEN, Client, MakeClient, post

BASE = "/api/v1/en/articles/a1/comments"
PROXIES = (ipaddress.ip_network("10.0.0.0/8"), ipaddress.ip_network("fd00::/8"))


def run_together(count: int, task: Callable[[int], Any]) -> list[Any]:
    """Run `task(i)` in `count` threads released at the same instant."""
    barrier = threading.Barrier(count)

    def start(i: int) -> Any:
        barrier.wait()
        return task(i)

    with ThreadPoolExecutor(count) as pool:
        return list(pool.map(start, range(count)))


# -- rate limit --------------------------------------------------------------------------


def test_rate_limit_answers_429_with_retry_after(make_client: MakeClient) -> None:
    client = make_client(comment_rate_count=3, comment_rate_seconds=60)
    for _ in range(3):
        assert post(client).status_code == 201
    limited = post(client)
    assert limited.status_code == 429
    assert isinstance(limited.json["detail"], str)
    assert 1 <= int(limited.headers["retry-after"]) <= 60
    assert limited.headers["cache-control"] == "no-store"
    # Per client: another address still may post; the limit spans all articles.
    assert post(client, remote_addr="192.0.2.50").status_code == 201
    assert post(client, path="/api/v1/fr/articles/a1/comments").status_code == 429
    assert client.simulate_get(f"{BASE}/count").json["count"] == 4


def test_rejected_requests_and_replays_do_not_use_the_budget(make_client: MakeClient) -> None:
    client = make_client(comment_rate_count=2, comment_rate_seconds=60)
    key = {"Idempotency-Key": "k-1"}
    assert post(client, headers=key).status_code == 201
    for _ in range(3):
        assert post(client, {"author": ""}).status_code == 422
        assert post(client, path="/api/v1/en/articles/zz/comments").status_code == 404
        assert post(client, headers=key).status_code == 201  # replay
    assert post(client).status_code == 201
    assert post(client).status_code == 429


def test_rate_limit_window_slides(make_client: MakeClient) -> None:
    client = make_client(comment_rate_count=2, comment_rate_seconds=1)
    assert [post(client).status_code for _ in range(3)] == [201, 201, 429]
    time.sleep(1.1)
    assert post(client).status_code == 201


def test_rate_limit_is_shared_by_instances(make_client: MakeClient) -> None:
    """Two services over one database stand for two workers or two instances."""
    first = make_client(comment_rate_count=3, comment_rate_seconds=60)
    second = make_client(comment_rate_count=3, comment_rate_seconds=60)
    assert post(first).status_code == 201
    assert post(second).status_code == 201
    assert post(first).status_code == 201
    assert post(second).status_code == 429
    assert post(first).status_code == 429


def test_rate_limit_holds_under_concurrency(make_client: MakeClient) -> None:
    clients = [make_client(comment_rate_count=5, comment_rate_seconds=60) for _ in range(2)]
    statuses = run_together(20, lambda i: post(clients[i % 2]).status_code)
    assert sorted(statuses) == [201] * 5 + [429] * 15


def test_no_raw_client_address_is_stored(client: Client, dsn: str) -> None:
    address = "203.0.113.77"
    assert post(client, remote_addr=address).status_code == 201
    rows = client.service.store._run(  # type: ignore[attr-defined]
        lambda conn: [
            conn.execute(f"SELECT * FROM {table}").fetchall()
            for table in ("comments", "comment_rate_events", "comment_secrets")
        ]
    )
    assert address not in repr(rows)
    assert all(len(bytes(row[0])) == 32 for row in rows[1])  # HMAC-SHA256 digests
    if dsn.startswith("sqlite:///"):
        path = Path(dsn.removeprefix("sqlite:///"))
        for file in (path, path.with_name(path.name + "-wal")):
            assert address.encode() not in file.read_bytes()


# -- client address ----------------------------------------------------------------------


def identity(remote: str, forwarded: str | None = None) -> str:
    headers = {"X-Forwarded-For": forwarded} if forwarded is not None else {}
    req = falcon.testing.create_req(remote_addr=remote, headers=headers)
    return client_identity(req, PROXIES)


def test_forwarded_for_is_believed_only_from_trusted_proxies() -> None:
    assert identity("198.51.100.1", "1.1.1.1") == "198.51.100.1"
    assert identity("10.1.2.3", "203.0.113.5") == "203.0.113.5"
    # The right-most untrusted entry wins; entries left of it are client-written.
    assert identity("10.1.2.3", "9.9.9.9, 203.0.113.5") == "203.0.113.5"
    assert identity("10.1.2.3", "203.0.113.5, 10.0.0.9, 10.0.0.8") == "203.0.113.5"
    assert identity("10.1.2.3", "garbage, 203.0.113.5") == "203.0.113.5"
    assert identity("10.1.2.3", "203.0.113.5:4711") == "203.0.113.5"
    assert identity("10.1.2.3", "[2001:db8::1]:443") == "2001:db8::/64"
    # Only proxies in the chain: the left-most of them is the client.
    assert identity("10.1.2.3", "10.0.0.9") == "10.0.0.9"
    assert identity("10.1.2.3", "") == "10.1.2.3"
    assert identity("10.1.2.3") == "10.1.2.3"
    assert identity("::ffff:10.1.2.3", "203.0.113.5") == "203.0.113.5"
    assert identity("fd00::1", "203.0.113.5") == "203.0.113.5"


def test_a_unix_socket_peer_is_the_proxy_only_when_trusted() -> None:
    """`NEWS_TRUSTED_PROXIES=unix` (make cluster): the peer on the instance's socket is nginx,
    which writes the client's address; without it, every unix peer is one client."""

    def unix(forwarded: str | None, trusted: bool) -> str:
        headers = {"X-Forwarded-For": forwarded} if forwarded is not None else {}
        env = falcon.testing.create_environ(headers=headers)
        env["REMOTE_ADDR"] = ""  # what gunicorn sets for a unix socket peer
        return client_identity(falcon.Request(env), (), trusted)

    assert unix("203.0.113.5", True) == "203.0.113.5"
    assert unix("9.9.9.9, 203.0.113.5", True) == "203.0.113.5"
    assert unix(None, True) == unix("", True) == "peer:"
    assert unix("203.0.113.5", False) == unix("198.51.100.1", False) == "peer:"
    # An IP peer is still judged by the networks alone.
    req = falcon.testing.create_req(remote_addr="127.0.0.1", headers={"X-Forwarded-For": "1.2.3.4"})
    assert client_identity(req, (), True) == "127.0.0.1"


def test_ipv6_clients_are_limited_per_64() -> None:
    assert identity("2001:db8:1:2::1") == identity("2001:db8:1:2:ffff::9") == "2001:db8:1:2::/64"
    assert identity("2001:db8:1:3::1") != identity("2001:db8:1:2::1")


def test_trusted_proxy_handling_through_http(make_client: MakeClient) -> None:
    client = make_client(comment_rate_count=1, comment_rate_seconds=60, trusted_proxies=PROXIES)

    def send(remote: str, forwarded: str) -> int:
        return post(client, remote_addr=remote, headers={"X-Forwarded-For": forwarded}).status_code

    # An untrusted peer cannot pick a fresh identity per request.
    assert send("198.51.100.1", "1.1.1.1") == 201
    assert send("198.51.100.1", "2.2.2.2") == 429
    # Behind the proxies, the forwarded client is limited, whichever proxy relays it...
    assert send("10.0.0.1", "203.0.113.5") == 201
    assert send("10.0.0.2", "203.0.113.5") == 429
    assert send("10.0.0.2", "6.6.6.6, 203.0.113.5") == 429
    # ...and a different forwarded client is not.
    assert send("10.0.0.1", "203.0.113.6, 10.0.0.3") == 201


# -- idempotency ----------------------------------------------------------------------------


def test_idempotent_retry_returns_the_first_comment(client: Client) -> None:
    key = {"Idempotency-Key": "retry-1"}
    first = post(client, {"author": "Ann", "content": "Hello"}, headers=key)
    again = post(client, {"author": " Ann", "content": "Hello "}, headers=key)
    assert first.status_code == again.status_code == 201
    assert again.json == first.json
    assert again.headers["location"] == first.headers["location"]
    assert again.headers["idempotent-replayed"] == "true"
    assert "idempotent-replayed" not in first.headers
    assert client.simulate_get(f"{BASE}/count").json["count"] == 1


def test_idempotency_key_is_scoped_to_article_and_language(client: Client) -> None:
    key = {"Idempotency-Key": "shared"}
    ids = {
        post(client, headers=key, path=path).json["id"]
        for path in (BASE, "/api/v1/en/articles/a2/comments", "/api/v1/fr/articles/a1/comments")
    }
    assert len(ids) == 3


def test_idempotency_key_conflicts(client: Client) -> None:
    key = {"Idempotency-Key": "k"}
    first = post(client, headers=key).json
    different = post(client, {"author": "Ann", "content": "Other"}, headers=key)
    assert different.status_code == 409
    assert isinstance(different.json["detail"], str)
    auth = {"Authorization": f"Bearer {ADMIN_TOKEN}"}
    assert client.simulate_delete(f"{BASE}/{first['id']}", headers=auth).status_code == 204
    # A retry must not bring back what an administrator deleted.
    after_delete = post(client, headers=key)
    assert after_delete.status_code == 409
    assert client.simulate_get(f"{BASE}/count").json["count"] == 0


@pytest.mark.parametrize("key", ["", "   ", "x" * 201, "naïve", "tab\there"])
def test_invalid_idempotency_key_is_422(client: Client, key: str) -> None:
    result = post(client, headers={"Idempotency-Key": key})
    assert result.status_code == 422
    assert [item["loc"] for item in result.json["detail"]] == [["header", "idempotency-key"]]
    assert post(client, headers={"Idempotency-Key": "x" * 200}).status_code == 201


@pytest.mark.parametrize("same_client", [True, False])
def test_racing_idempotent_retries_create_one_comment(client: Client, same_client: bool) -> None:
    def attempt(i: int) -> Any:
        remote = "192.0.2.1" if same_client else f"192.0.2.{i + 1}"
        return post(client, headers={"Idempotency-Key": "race"}, remote_addr=remote)

    results = run_together(20, attempt)
    assert {r.status_code for r in results} == {201}
    assert len({r.json["id"] for r in results}) == 1
    assert len({r.headers["location"] for r in results}) == 1
    assert sum("idempotent-replayed" not in r.headers for r in results) == 1
    assert client.simulate_get(f"{BASE}/count").json["count"] == 1


# -- concurrent writers ------------------------------------------------------------------------


def test_fifty_concurrent_creates(make_client: MakeClient) -> None:
    clients = [make_client() for _ in range(2)]  # two "workers" sharing the database
    results = run_together(
        50, lambda i: post(clients[i % 2], {"author": f"u{i}", "content": f"c{i}"})
    )
    assert [r.status_code for r in results] == [201] * 50
    ids = {r.json["id"] for r in results}
    assert len(ids) == 50
    assert clients[0].simulate_get(f"{BASE}/count").json["count"] == 50
    listed = clients[1].simulate_get(BASE, params={"page_size": "100"}).json
    assert listed["total"] == 50 and {c["id"] for c in listed["items"]} == ids
