"""What a route's declaration (app/routes.py) does to its answers, checked over the whole
table: the language check of every `{language}` route, `no-store`, `public` and `admin`;
and app.mount refusing a resource that does not fit its declaration."""

from __future__ import annotations

import re
import subprocess
import sys
from collections.abc import Iterator
from types import SimpleNamespace
from typing import Any
from urllib.parse import quote

import falcon
import pytest
from falcon.testing import Result, TestClient

from app import errors
from app.config import PROJECT_ROOT
from app.http_cache import CachePolicy
from app.mount import mount
from app.resources.articles import BundleResource
from app.routes import ROUTES, Operation, Route, Texts
from tests.conftest import CACHE_CONTROL
from tests.helpers import KO_ID

# A value for every path field, naming something that exists in the test corpus.
FIELDS = {
    "language": "ko",
    "article_id": quote(KO_ID, safe=""),
    "comment_id": "01JD5Z3N8Q6V2K4M7R9T0W1X2Y",
    "notice_id": "01JD5Z3N8Q6V2K4M7R9T0W1X2Z",
    "sitemap": "ko",
    "asset": "init.js",
}
TEXTS = Texts("summary", "description", "returns")


def _path(route: Route, **fields: str) -> str:
    return re.sub(r"\{(\w+)\}", lambda f: fields.get(f[1], FIELDS[f[1]]), route.path)


def _methods(route: Route) -> Iterator[str]:
    for op in route.operations:
        yield op.method.upper()
        if op.method == "get":
            yield "HEAD"


def _ask(client: TestClient, method: str, path: str, **kwargs: Any) -> Result:
    body = {} if method in ("POST", "PUT", "PATCH") else None
    return client.simulate_request(method, path, json=body, **kwargs)


LANGUAGE_ROUTES = [r for r in ROUTES if "{language}" in r.path]


def test_the_table_has_language_routes_of_every_kind() -> None:
    # The property below is worth something only over routes of every policy and method.
    assert {r.cache for r in LANGUAGE_ROUTES} == {"public", "no-store"}
    methods = {m for r in LANGUAGE_ROUTES for m in _methods(r)}
    assert methods == {"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE"}


@pytest.mark.parametrize("route", LANGUAGE_ROUTES, ids=lambda r: r.path)
def test_every_language_route_gives_the_same_400(client: TestClient, route: Route) -> None:
    for language in ("xx", "EN", "en-US"):
        for method in _methods(route):
            result = _ask(client, method, _path(route, language=language))
            assert result.status_code == 400, (method, route.path)
            if method != "HEAD":
                assert result.json == {"detail": f"Unsupported language: {language}"}
            headers = [(k, v) for k, v in result.headers.items() if k != "content-length"]
            expected = [
                ("content-type", "application/json"),
                ("x-content-type-options", "nosniff"),
            ]
            if route.cache == "no-store":  # set before the check: the 400 carries it too
                expected.insert(0, ("cache-control", "no-store"))
            assert headers == expected, (method, route.path)


NO_STORE = [r for r in ROUTES if r.cache == "no-store"]
PUBLIC = [r for r in ROUTES if r.cache == "public"]


@pytest.mark.parametrize("route", NO_STORE, ids=lambda r: r.path)
def test_no_store_routes_say_so_on_every_answer(client: TestClient, route: Route) -> None:
    for method in _methods(route):
        result = _ask(client, method, _path(route))
        assert result.headers["Cache-Control"] == "no-store", (method, route.path)
        assert "ETag" not in result.headers


@pytest.mark.parametrize("route", PUBLIC, ids=lambda r: r.path)
def test_public_routes_validate_and_cache(client: TestClient, route: Route) -> None:
    path = _path(route)
    query = "q=news" if route.path.endswith("/search") else None  # its one required parameter
    result = client.simulate_get(path, query_string=query)
    assert result.status_code == 200, path
    assert result.headers["Cache-Control"] == CACHE_CONTROL
    assert result.headers["Vary"] == "Accept-Encoding"
    etag = result.headers["ETag"]
    again = client.simulate_get(path, query_string=query, headers={"If-None-Match": etag})
    assert again.status_code == 304 and again.content == b""
    assert again.headers["ETag"] == etag


def test_operations_that_need_a_token_ask_for_it(client: TestClient) -> None:
    # Right after the language: an empty body would be a 422, an unknown id a 404.
    needing = [(r, op) for r in ROUTES for op in r.operations if op.auth not in (None, "author?")]
    assert {op.auth for _, op in needing} == {"moderator", "author", "notice", "moderator|author"}
    for route, op in needing:
        result = _ask(client, op.method.upper(), _path(route))
        assert result.status_code == 401, route.path
        assert result.headers["WWW-Authenticate"] == 'Bearer realm="comments"'
        assert result.headers["Cache-Control"] == "no-store"


# The mechanism itself, on a table of its own.


class Plain:
    """A resource that sets no header of its own."""

    def on_get(
        self, req: falcon.Request, resp: falcon.Response, *fields: str, **params: str
    ) -> None:
        resp.data = b'"' + ",".join([*fields, *params.values()]).encode() + b'"'

    on_head = on_get


class Deletable(Plain):
    def on_delete(self, req: falcon.Request, resp: falcon.Response, **params: str) -> None:
        resp.status = 204


def _op(method: str = "get") -> Operation:
    return Operation(f"op{method}", TEXTS, None, method)


def _client(*routes: Route, token: str | None = "secret") -> TestClient:
    app = falcon.App()
    errors.install(app)
    shared: Any = SimpleNamespace(settings=SimpleNamespace(admin_token=token))
    mount(app, shared, routes)
    return TestClient(app)


def test_no_store_comes_from_the_declaration() -> None:
    declared = Route("/a/{language}", lambda s: Plain(), "t", (_op(),), cache="no-store")
    undeclared = Route("/b", lambda s: Plain(), "t", (_op(),), cache=None)
    client = _client(declared, undeclared)
    assert client.simulate_get("/a/en").headers["Cache-Control"] == "no-store"
    refused = client.simulate_get("/a/xx")
    assert refused.status_code == 400 and refused.headers["Cache-Control"] == "no-store"
    assert "Cache-Control" not in client.simulate_get("/b").headers


def test_the_language_check_comes_from_the_path() -> None:
    client = _client(Route("/x/{language}/{item}", lambda s: Plain(), "t", (_op(),), cache=None))
    assert client.simulate_get("/x/fr/1").json == "fr,1"
    refused = client.simulate_get("/x/zz/1")
    assert refused.status_code == 400 and refused.json == {"detail": "Unsupported language: zz"}


def test_public_routes_get_the_apps_policy() -> None:
    policy = CachePolicy(7)
    resource = BundleResource(SimpleNamespace())  # type: ignore[arg-type]
    shared: Any = SimpleNamespace(cache=policy, settings=None)
    mount(falcon.App(), shared, [Route("/q", lambda s: resource, "t", (), "public", False)])
    assert resource.cache is policy
    with pytest.raises(RuntimeError, match="public route needs a BundleResource"):
        mount(falcon.App(), shared, [Route("/r", lambda s: Plain(), "t", (), "public", False)])


def test_a_resource_must_answer_exactly_its_declared_methods() -> None:
    shared: Any = SimpleNamespace(settings=SimpleNamespace(admin_token=None))
    undeclared_delete = Route("/d", lambda s: Deletable(), "t", (_op(),), cache=None)
    with pytest.raises(RuntimeError, match="declared"):
        mount(falcon.App(), shared, [undeclared_delete])
    missing_post = Route("/e", lambda s: Deletable(), "t", (_op(), _op("delete"), _op("post")))
    with pytest.raises(RuntimeError, match="declared"):
        mount(falcon.App(), shared, [missing_post])


def test_every_operation_has_its_texts() -> None:
    for route in ROUTES:
        for op in route.operations:
            assert all(op.texts), op.operation_id


def test_every_operation_declares_the_errors_its_route_can_answer() -> None:
    """app/openapi.py documents exactly the declared statuses: the ones every route of this
    shape answers must be among them."""
    for route in ROUTES:
        for op in route.operations:
            expected = {414}
            expected |= {400} if "{language}" in route.path else set()
            expected |= {406} if route.cache == "public" else set()
            expected |= {422} if op.query or op.body or op.headers else set()
            expected |= {413, 415} if op.body else set()
            expected |= {503} if route.tag in ("comments", "moderation") else set()
            assert expected <= set(op.errors), (op.operation_id, expected - set(op.errors))
            assert (op.gone is not None) <= (410 in op.errors), op.operation_id


def test_the_document_module_does_not_import_the_route_table() -> None:
    """No import cycle: app/routes.py writes its document with app/openapi.py, which reads
    only the declarations' types (app/declarations.py)."""
    code = "import sys, app.openapi; assert 'app.routes' not in sys.modules, 'cycle'"
    subprocess.run([sys.executable, "-c", code], check=True, cwd=PROJECT_ROOT)
