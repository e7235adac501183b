"""/health, /ready, /openapi.json (docs/api.md §5)."""

from __future__ import annotations

import json
from pathlib import Path

from falcon.testing import TestClient

from app.config import Settings
from app.wsgi import create_app


def test_health(client: TestClient) -> None:
    result = client.simulate_get("/health")
    assert result.status_code == 200
    assert result.headers["content-type"].startswith("application/json")
    assert json.loads(result.content) == {"status": "ok"}
    head = client.simulate_head("/health")
    assert head.status_code == 200 and head.content == b""


def test_ready_names_the_served_bundle(client: TestClient, bundle: tuple[Path, str]) -> None:
    result = client.simulate_get("/ready")
    assert result.status_code == 200
    body = json.loads(result.content)
    assert body == {"status": "ready", "bundle": bundle[1]}
    manifest = json.loads((bundle[0] / "manifest.json").read_bytes())
    assert body["bundle"] == manifest["bundle_id"]


def test_openapi_served(client: TestClient) -> None:
    result = client.simulate_get("/openapi.json")
    assert result.status_code == 200
    assert result.headers["content-type"].startswith("application/json")
    doc = json.loads(result.content)
    assert doc["openapi"].startswith("3.1")
    head = client.simulate_head("/openapi.json")
    assert head.status_code == 200 and head.content == b""


def test_ready_is_503_when_comment_store_does_not_answer(
    bundle: tuple[Path, str], tmp_path: Path
) -> None:
    # Nothing listens on port 1: the comment store cannot answer.
    settings = Settings(bundle_dir=bundle[0], comments_dsn="postgresql://news@127.0.0.1:1/news")
    client = TestClient(create_app(settings))
    result = client.simulate_get("/ready")
    assert result.status_code == 503
    body = json.loads(result.content)
    assert set(body) == {"detail"} and isinstance(body["detail"], str) and body["detail"]
    assert result.headers["content-type"].startswith("application/json")
    # Liveness and the read API do not depend on the comment store.
    assert client.simulate_get("/health").status_code == 200
    assert client.simulate_get("/api/v1/en/articles/latest").status_code == 200
