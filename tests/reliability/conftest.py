"""Fixtures for the reliability tests: the sample bundle and a real gunicorn serving it."""

from __future__ import annotations

import os
import socket
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.reliability.harness import Server, build_sample_bundle


@pytest.fixture(scope="session")
def sample_bundle(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("rel-bundle") / "bundle"
    build_sample_bundle(out)
    return out


@pytest.fixture(scope="module")
def server(sample_bundle: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    """One gunicorn (2 sync workers, SQLite comments) shared by a test module;
    NEWS_TEST_WORKER_CLASS=gthread runs these tests against the threaded worker."""
    worker_class = os.environ.get("NEWS_TEST_WORKER_CLASS", "sync")
    with Server(
        tmp_path_factory.mktemp("rel-server"), sample_bundle, worker_class=worker_class
    ) as srv:
        yield srv


def postgres_reachable() -> bool:
    try:
        with socket.create_connection(("127.0.0.1", 5432), timeout=1):
            return True
    except OSError:
        return False


@pytest.fixture
def postgres_admin_dsn() -> str:
    """The shared server's maintenance DSN; skip (or fail under CI) when it is not there."""
    if not postgres_reachable():
        message = "PostgreSQL is not reachable on 127.0.0.1:5432"
        if os.environ.get("CI"):
            pytest.fail(f"{message} (CI is set, so this is a failure)")
        pytest.skip(message)
    return "postgresql://postgres@127.0.0.1:5432/postgres"
