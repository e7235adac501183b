"""One real cluster for the module: nginx in front of three gunicorn instances sharing a
PostgreSQL database of its own, reached through a relay the tests can cut."""

from __future__ import annotations

import os
import random
import secrets
import shutil
import socket
from collections.abc import Iterator
from pathlib import Path

import pytest

from cluster.runtime import Cluster
from tests.reliability.conftest import postgres_reachable
from tests.reliability.harness import SAMPLE_SRC, TcpProxy

ADMIN_DSN = "postgresql://postgres@127.0.0.1:5432/postgres"
# The moderator `admin` of every instance (docs/moderation.md).
CLUSTER_ADMIN_TOKEN = "cluster-admin-token"
# The instances' exact per-client limit, small enough to reach in a test.
RATE_LIMIT = (5, 60)


def require(ok: bool, message: str) -> None:
    """Skip without the tool on a developer machine; under CI a missing tool fails."""
    if ok:
        return
    if os.environ.get("CI"):
        pytest.fail(f"{message} (CI is set, so this is a failure)")
    pytest.skip(message)


@pytest.fixture(scope="package")
def database() -> Iterator[str]:
    require(postgres_reachable(), "PostgreSQL is not reachable on 127.0.0.1:5432")
    import psycopg

    name = f"news_cluster_{os.getpid()}_{secrets.token_hex(3)}"
    yield name  # Cluster.start creates it
    with psycopg.connect(ADMIN_DSN, autocommit=True) as conn:
        conn.execute(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = %s", (name,)
        )
        conn.execute(f'DROP DATABASE IF EXISTS "{name}"')


@pytest.fixture(scope="package")
def db_relay() -> Iterator[TcpProxy]:
    relay = TcpProxy(5432).start()
    yield relay
    relay.cut()


def server_port() -> int:
    """A free port below the kernel's ephemeral range, for nginx (the instances are on unix
    sockets): a port in that range may become some client connection's source port while
    the cluster runs (the load's connections are many)."""
    low = int(Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()[0])
    rng = random.Random()
    for _ in range(200):
        port = rng.randrange(max(1024, low - 12000), low)
        with socket.socket() as sock:
            try:
                sock.bind(("127.0.0.1", port))
            except OSError:
                continue
            return port
    raise RuntimeError("no free port below the ephemeral range")


@pytest.fixture(scope="package")
def cluster(
    database: str, db_relay: TcpProxy, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Cluster]:
    require(shutil.which("nginx") is not None, "nginx is not installed (apt-get install nginx)")
    runtime = tmp_path_factory.mktemp("cluster")
    cluster = Cluster(
        runtime,
        instances=3,
        port=server_port(),
        dsn=f"postgresql://postgres@127.0.0.1:{db_relay.port}/{database}",
        env={
            "NEWS_COMMENT_RATE_LIMIT": f"{RATE_LIMIT[0]}/{RATE_LIMIT[1]}",
            "NEWS_BUNDLE_CHECK_INTERVAL": "0.2",
            "NEWS_ADMIN_TOKEN": CLUSTER_ADMIN_TOKEN,
        },
    )
    cluster.start(SAMPLE_SRC)
    try:
        yield cluster
    finally:
        cluster.stop()


@pytest.fixture
def source_copy(tmp_path: Path) -> Path:
    """A copy of the sample source that a test may change and publish."""
    src = tmp_path / "src"
    shutil.copytree(SAMPLE_SRC, src)
    return src
