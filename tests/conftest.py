"""Session fixtures: the second corpus, built by the real builder, served by the real app."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import falcon
import falcon.testing
import pytest

from app.builder.builder import build
from app.config import Settings
from app.wsgi import create_app
from tests.helpers import corpus_records, write_corpus

CACHE_MAX_AGE = 123
# What cacheable answers carry (stale-* at their defaults).
CACHE_CONTROL = f"public, max-age={CACHE_MAX_AGE}, stale-while-revalidate=60, stale-if-error=86400"


@pytest.fixture(scope="session")
def records() -> list[dict[str, Any]]:
    return corpus_records()


@pytest.fixture(scope="session")
def corpus_src(tmp_path_factory: pytest.TempPathFactory, records: list[dict[str, Any]]) -> Path:
    src = tmp_path_factory.mktemp("corpus") / "src"
    write_corpus(src, records)
    return src


@pytest.fixture(scope="session")
def bundle(corpus_src: Path) -> tuple[Path, str]:
    """(bundle directory, bundle id) built from the corpus with the real builder."""
    out = corpus_src.parent / "bundle"
    bundle_id = build(corpus_src, out)
    return out, bundle_id


@pytest.fixture(scope="session")
def app(bundle: tuple[Path, str], tmp_path_factory: pytest.TempPathFactory) -> falcon.App:
    tmp = tmp_path_factory.mktemp("comments")
    settings = Settings(
        bundle_dir=bundle[0],
        comments_dsn=f"sqlite:///{tmp}/c.sqlite3",
        cache_max_age=CACHE_MAX_AGE,
    )
    return create_app(settings)


@pytest.fixture(scope="session")
def client(app: falcon.App) -> Iterator[falcon.testing.TestClient]:
    yield falcon.testing.TestClient(app)
