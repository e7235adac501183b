"""The production topology end to end: real nginx, three real gunicorn instances, the real
PostgreSQL (through a relay the tests cut). Each test leaves the cluster as it found it."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from collections import Counter
from pathlib import Path

import pytest

from cluster.runtime import Cluster, ready
from tests.cluster.conftest import CLUSTER_ADMIN_TOKEN, RATE_LIMIT
from tests.cluster.traffic import Load, comments_path, fresh_source, open_socket, request
from tests.comments.support import CREATE_ONLY
from tests.reliability.harness import (
    REPO,
    SAMPLE_SRC,
    TcpProxy,
    sample_article_ids,
    wait_until,
)
from tests.server import children

pytestmark = [pytest.mark.e2e, pytest.mark.postgres]

LOAD_SECONDS = 3.0


def read_paths(cluster: Cluster) -> list[str]:
    ids = sample_article_ids(cluster.members[0].bundle_dir)
    return [
        "/api/v1/en/articles?page=1&page_size=20",
        "/api/v1/ja/articles/latest?limit=10",
        "/api/v1/en/articles/search?q=economy",
        "/api/v1/fr/categories",
        f"/api/v1/en/articles/{ids[0]}",
        f"/api/v1/en/articles/{ids[1]}",
    ]


def article(cluster: Cluster) -> str:
    return sample_article_ids(cluster.members[0].bundle_dir)[0]


def access_records(cluster: Cluster) -> dict[str, list[dict[str, object]]]:
    """Each instance's JSON access log."""
    out = {}
    for member in cluster.members:
        path = member.root / "access.log"
        lines = path.read_text().splitlines() if path.exists() else []
        out[member.name] = [json.loads(line) for line in lines if line.startswith("{")]
    return out


def restart(cluster: Cluster, name: str) -> None:
    """Start the instance again and wait until it is ready with all its workers: gunicorn
    forks them up to 0.1 s apart, and the first can answer /ready before the last exists."""
    member = next(m for m in cluster.members if m.name == name)
    cluster.start_instance(member)
    assert wait_until(lambda: ready(member.address) is not None, 20), member.log_path.read_text()
    workers = int(cluster.instance_env(member).get("WEB_CONCURRENCY", "2"))
    assert member.pid is not None
    pid = member.pid
    assert wait_until(lambda: len(children(pid)) == workers, 20), member.log_path.read_text()


# -- instances failing and changing under load -------------------------------------------


def test_sigkill_of_one_instance_under_load_fails_no_get(cluster: Cluster) -> None:
    victim = cluster.members[1]
    assert victim.pid is not None
    with Load(cluster.port, read_paths(cluster)) as load:
        time.sleep(1.0)
        os.killpg(victim.pid, signal.SIGKILL)  # the master and its workers, at once
        time.sleep(LOAD_SECONDS)
    try:
        assert load.failures == []
        assert load.sent["GET"] > 100
        assert ready(victim.address) is None  # it really is gone
    finally:
        os.waitpid(victim.pid, 0)
        restart(cluster, victim.name)


def test_rolling_publish_under_load(cluster: Cluster, source_copy: Path) -> None:
    added = {
        "id": "rolled-out-article",
        "language": "en",
        "title": "Rolled out",
        "summary": "Published while the cluster served traffic.",
        "content": "One paragraph.",
        "category": "Rollouts",
        "published_at": "2026-11-23T10:00:00Z",
    }
    with open(source_copy / "rollout.jsonl", "w") as fh:
        fh.write(json.dumps(added) + "\n")
    old = ready(cluster.port)
    assert old is not None
    with Load(cluster.port, read_paths(cluster), post_to=comments_path(article(cluster))) as load:
        time.sleep(0.5)
        steps: list[str] = []
        # What every instance serves each time the rollout reports a step.
        seen: list[list[str | None]] = []

        def step(message: str) -> None:
            steps.append(message)
            seen.append([(ready(m.address) or {}).get("bundle") for m in cluster.members])

        new_id = cluster.publish(source_copy, log=step)
        time.sleep(0.5)
    assert load.failures == []
    assert load.sent["GET"] > 50 and load.sent["POST"] > 0
    assert new_id != old["bundle"]
    assert len(steps) == 1 + len(cluster.members)  # one instance at a time, each confirmed
    # One at a time: after step k, exactly the first k instances serve the new bundle.
    for k, bundles in enumerate(seen):
        assert bundles == [new_id] * k + [old["bundle"]] * (len(cluster.members) - k), k
    for member in cluster.members:
        body = ready(member.address)
        assert body is not None and body["bundle"] == new_id, member.name
        got = request(member.address, "GET", "/api/v1/en/articles/rolled-out-article")
        assert got.status == 200
    assert request(cluster.port, "GET", "/api/v1/en/articles/rolled-out-article").status == 200


def test_corrupt_bundle_is_refused_and_reported(cluster: Cluster, tmp_path: Path) -> None:
    """A bundle damaged after verification (a bad disk, a hand copy) reaches one instance's
    directory directly: that instance keeps serving the old bundle and says why in /ready."""
    member = cluster.members[2]
    before = ready(member.address)
    assert before is not None
    damaged = tmp_path / "damaged"
    subprocess.run(
        [sys.executable, str(REPO / "scripts" / "build_bundles.py"), "--src", str(SAMPLE_SRC),
         "--out", str(damaged)],
        check=True, capture_output=True,
    )  # fmt: skip
    # Any file the manifest lists, cut short; the manifest itself stays intact and new.
    victim = max((p for p in damaged.rglob("*") if p.is_file() and p.name != "manifest.json"),
                 key=lambda p: p.stat().st_size)  # fmt: skip
    victim.write_bytes(victim.read_bytes()[: victim.stat().st_size // 2])
    aside = member.bundle_dir.with_name("bundle.aside")
    os.rename(member.bundle_dir, aside)
    os.rename(damaged, member.bundle_dir)
    try:
        assert wait_until(lambda: bool((ready(member.address) or {}).get("rejected_bundle")), 10)
        body = ready(member.address)
        assert body is not None and body["bundle"] == before["bundle"]
        for path in read_paths(cluster):
            assert request(member.address, "GET", path).status == 200
    finally:
        os.rename(member.bundle_dir, tmp_path / "damaged.out")
        os.rename(aside, member.bundle_dir)
    cluster.install(member)  # a verified install: the refusal clears
    assert wait_until(lambda: "rejected_bundle" not in (ready(member.address) or {"x": 1}), 10)


PROBES = ("/health", "/ready", "/api/v1/en/articles/latest?limit=3")
PROBE_LIMIT = 1.0  # seconds: what a load balancer's health check allows (docs/reliability.md)


def probe_under_slow_clients(
    port: int | str, clients: int, ticks: int, bodies: int = 0, post_to: str = ""
) -> tuple[list[str], list[float]]:
    """Open `clients` connections to `port`: `bodies` of them send a comment's head and then
    its body a few bytes a second, the rest send a request head one line a second. Probe the
    service meanwhile; (failures, probe times)."""
    slow: list[tuple[socket.socket, bytes]] = []
    probes: list[float] = []
    failures: list[str] = []
    try:
        for n in range(clients):
            sock = open_socket(port)
            if n < bodies:
                sock.sendall(
                    f"POST {post_to} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                    f"Content-Length: 4000\r\n\r\n".encode()
                )
                slow.append((sock, b'{"a'))
            else:
                sock.sendall(f"GET /api/v1/en/articles?page={n} HTTP/1.1\r\n".encode())
                slow.append((sock, b"X-Slow: 1\r\n"))
        for _tick in range(ticks):
            for sock, trickle in slow:
                with contextlib.suppress(OSError):  # a server may give up on one: fine
                    sock.sendall(trickle)
            for probe in PROBES:
                started = time.monotonic()
                try:
                    status = request(port, "GET", probe, timeout=2.0).status
                    if status != 200:
                        failures.append(f"{probe}: {status}")
                except OSError as exc:
                    failures.append(f"{probe}: {exc}")
                probes.append(time.monotonic() - started)
            time.sleep(1.0)
    finally:
        for sock, _ in slow:
            sock.close()
    return failures, probes


def test_slow_clients_do_not_starve_the_probes(cluster: Cluster) -> None:
    """300 connections, half sending their request head a line a second, half a comment body
    a few bytes a second: nginx holds them, the instances never see them, and every probe
    answers within a second."""
    failures, probes = probe_under_slow_clients(
        cluster.port, 300, 5, bodies=150, post_to=comments_path(article(cluster))
    )
    print(f"\n300 slow clients: slowest probe {max(probes):.3f} s of {len(probes)}")
    assert failures == []
    assert len(probes) == 5 * len(PROBES) and max(probes) < PROBE_LIMIT, probes


def test_the_same_slow_clients_starve_an_instance_without_nginx(cluster: Cluster) -> None:
    """The oracle for the test above: sent straight to one instance, the same clients leave
    its probes unanswered, which is what nginx is there for."""
    member = cluster.members[0]
    failures, _ = probe_under_slow_clients(
        member.address, 300, 1, bodies=150, post_to=comments_path(article(cluster))
    )
    # The probes time out (2 s each); by the third, a worker may have dropped a slow client.
    assert len(failures) >= len(PROBES) - 1 and "timed out" in failures[0], failures
    assert wait_until(lambda: ready(member.address) is not None, 15)  # and it recovers


# -- comments across instances -------------------------------------------------------------


def test_comment_created_through_nginx_is_visible_on_every_instance(cluster: Cluster) -> None:
    path = comments_path(article(cluster))
    created = request(
        cluster.port, "POST", path, json_body={"author": "Mina", "content": "Seen everywhere?"},
        source=fresh_source(),
    )  # fmt: skip
    assert created.status == 201, created.body
    comment = {k: v for k, v in created.json().items() if k not in CREATE_ONLY}
    for member in cluster.members:
        got = request(member.address, "GET", created.headers["location"])
        assert got.status == 200 and got.json() == comment, member.name
        listed = request(member.address, "GET", f"{path}?order=newest&page_size=100").json()
        assert comment in listed["items"], member.name


def test_a_decision_is_seen_by_every_instance_at_once(cluster: Cluster) -> None:
    """A moderator rejects a comment through one instance: the next request to each other
    instance (no wait) no longer shows it, and each shows the same log (docs/moderation.md)."""
    path = comments_path(article(cluster))
    created = request(
        cluster.port, "POST", path, json_body={"author": "Mina", "content": "To be rejected"},
        source=fresh_source(),
    )  # fmt: skip
    assert created.status == 201, created.body
    comment_id = created.json()["id"]
    admin = {"Authorization": f"Bearer {CLUSTER_ADMIN_TOKEN}"}
    first, *others = cluster.members
    decided = request(
        first.address, "POST", f"{path}/{comment_id}/decision",
        json_body={"action": "reject", "reason": "spam"}, headers=admin,
    )  # fmt: skip
    assert decided.status == 200 and decided.json()["status"] == "rejected", decided.body
    language = path.split("/")[3]
    for member in others:
        assert request(member.address, "GET", f"{path}/{comment_id}").status == 404, member.name
        listed = request(member.address, "GET", f"{path}?page_size=100").json()
        assert comment_id not in {c["id"] for c in listed["items"]}, member.name
        actions, after = [], 0
        while True:  # the whole log, page by page (other tests wrote to it too)
            log = request(
                member.address,
                "GET",
                f"/api/v1/{language}/moderation/log?limit=500&after={after}",
                headers=admin,
            ).json()
            actions += [e["action"] for e in log["items"] if e["comment_id"] == comment_id]
            if not log["items"]:
                break
            after = log["next"]
        assert actions == ["create", "reject"], member.name


def test_rate_limit_holds_across_instances(cluster: Cluster) -> None:
    client = fresh_source()
    path = comments_path(article(cluster))
    statuses = []
    for n in range(RATE_LIMIT[0] + 3):
        reply = request(
            cluster.port, "POST", path, json_body={"author": "a", "content": f"c{n}"}, source=client
        )
        statuses.append(reply.status)
        if reply.status == 429:
            assert int(reply.headers["retry-after"]) > 0
    assert statuses == [201] * RATE_LIMIT[0] + [429] * 3

    # The instances took turns: the limit is one budget across all of them.
    def served() -> Counter[str]:
        return Counter(
            name
            for name, records in access_records(cluster).items()
            for r in records
            if r["forwarded_for"] == client and r["method"] == "POST"
        )

    # gunicorn writes an access line after the response has gone: the last may lag the reply.
    wait_until(lambda: sum(served().values()) == len(statuses), 5)
    assert len(served()) >= 2 and sum(served().values()) == len(statuses), served()


def test_nginx_limits_a_comment_flood_before_the_instances(cluster: Cluster) -> None:
    client = fresh_source()
    path = comments_path(article(cluster))
    replies = []
    for n in range(45):
        replies.append(
            request(
                cluster.port,
                "POST",
                path,
                json_body={"author": "f", "content": f"{n}"},
                source=client,
            )
        )
    assert {r.status for r in replies} == {201, 429}
    assert all(r.headers["content-type"] == "application/json" for r in replies)
    reached = sum(
        1
        for records in access_records(cluster).values()
        for r in records
        if r["forwarded_for"] == client
    )
    # burst 20 plus the 1/s refill over the few seconds this takes; the rest never arrived.
    assert RATE_LIMIT[0] <= reached <= 26, reached
    from_nginx = [r for r in replies if r.json() == {"detail": "Too many requests"}]
    assert len(from_nginx) == len(replies) - reached
    # Reads by the same client are not limited.
    assert request(cluster.port, "GET", path, source=client).status == 200


def test_postgres_outage_then_recovery_on_every_instance(
    cluster: Cluster, db_relay: TcpProxy
) -> None:
    path = comments_path(article(cluster))
    reads = read_paths(cluster)
    read_failures: list[str] = []
    stop = threading.Event()

    def read_all_the_time() -> None:
        deadline = time.monotonic() + 40
        while not stop.is_set() and time.monotonic() < deadline:
            for p in reads:
                reply = request(cluster.port, "GET", p, timeout=2.0)
                if reply.status != 200:
                    read_failures.append(f"{p}: {reply.status}")

    reader = threading.Thread(target=read_all_the_time, daemon=True)
    reader.start()
    try:
        db_relay.cut()
        for member in cluster.members:
            assert wait_until(lambda m=member: request(m.address, "GET", path).status == 503, 10)
            reply = request(member.address, "GET", path)
            assert reply.json() == {"detail": "Comment store unavailable"}
        post = request(cluster.port, "POST", path, json_body={"author": "a", "content": "down"},
                       source=fresh_source())  # fmt: skip
        assert post.status == 503
        db_relay.start()

        def recovered(port: int | str) -> bool:
            return all(request(port, "GET", path).status == 200 for _ in range(6))

        for member in cluster.members:
            assert wait_until(lambda m=member: recovered(m.address), 20), member.name
        post = request(cluster.port, "POST", path, json_body={"author": "a", "content": "back"},
                       source=fresh_source())  # fmt: skip
        assert post.status == 201
    finally:
        stop.set()
        reader.join(10)
        if db_relay._listener is None:  # cut, and the test failed before restoring it
            db_relay.start()
    assert read_failures == []
    # The outage is counted where operators look for it.
    errors = 0.0
    for member in cluster.members:
        text = request(member.address, "GET", "/metrics").body.decode()
        errors += sum(
            float(line.rsplit(" ", 1)[1])
            for line in text.splitlines()
            if line.startswith("news_comment_store_errors_total")
        )
    assert errors >= len(cluster.members)


# -- nginx's own answers -------------------------------------------------------------------


def test_nginx_errors_are_json(cluster: Cluster) -> None:
    too_long = request(cluster.port, "GET", "/" + "a" * 20000)
    assert too_long.status == 414
    big = request(cluster.port, "POST", comments_path(article(cluster)), source=fresh_source(),
                  body=b"{" + b" " * 70000 + b"}",
                  headers={"Content-Type": "application/json"})  # fmt: skip
    assert big.status == 413
    with socket.create_connection(("127.0.0.1", cluster.port), timeout=5) as sock:
        sock.sendall(b"NOT HTTP AT ALL\r\n\r\n")
        raw = sock.recv(65536)
    head, _, body = raw.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 400")
    for reply in (too_long, big):
        assert reply.headers["content-type"] == "application/json"
        assert set(reply.json()) == {"detail"}
    assert json.loads(body) == {"detail": "Bad Request"}
    # An instance's own errors pass through untouched.
    assert request(cluster.port, "GET", "/no/such/path").json() == {"detail": "Not Found"}


def test_nginx_answers_json_502_when_no_instance_answers(cluster: Cluster, tmp_path: Path) -> None:
    from cluster.runtime import Instance
    from tests.http_support import free_port

    lonely = Cluster(tmp_path, port=free_port())
    lonely.members = [Instance("dead", free_port(), tmp_path / "dead")]
    lonely.start_nginx()
    try:
        reply = request(lonely.port, "GET", "/api/v1/en/articles")
        assert reply.status == 502
        assert reply.headers["content-type"] == "application/json"
        assert reply.json() == {"detail": "Bad Gateway"}
    finally:
        lonely.stop()
