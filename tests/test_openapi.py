"""/openapi.json is valid OpenAPI 3.1, lists exactly the app's routes, and its schemas fit
real responses (checked with jsonschema-rs, JSON Schema 2020-12 as OpenAPI 3.1 uses).

The document is generated from app/routes.py and app/models/; these tests hold it to what
the running app does. Real third-party tools check it too: tests/test_openapi_tools.py.
"""

from __future__ import annotations

import importlib.metadata
import json
import re
from typing import Any

import falcon
import falcon.inspect
import jsonschema_rs
import pytest
from falcon.testing import TestClient
from openapi_spec_validator import validate as validate_spec
from openapi_spec_validator.validation.exceptions import OpenAPIValidationError

from app.languages import LANGUAGES
from app.routes import ROUTES
from tests.helpers import KO_ID, article_path


def validate(value: Any, schema: dict[str, Any], doc: dict[str, Any]) -> None:
    """Raise jsonschema_rs.ValidationError where `value` breaks `schema` (refs into `doc`)."""
    jsonschema_rs.Draft202012Validator({**schema, "components": doc["components"]}).validate(value)


def test_validator_rejects_what_it_should() -> None:
    doc = {"components": {"schemas": {"N": {"type": "integer", "minimum": 1}}}}
    schema = {
        "type": "object",
        "required": ["a"],
        "properties": {"a": {"$ref": "#/components/schemas/N"}, "b": {"type": ["string", "null"]}},
    }
    validate({"a": 1, "b": None}, schema, doc)
    for bad in ({}, {"a": 0}, {"a": "1"}, {"a": True}, {"a": 1, "b": 2}, []):
        with pytest.raises(jsonschema_rs.ValidationError):
            validate(bad, schema, doc)


@pytest.fixture(scope="module")
def doc(client: TestClient) -> dict[str, Any]:
    result = client.simulate_get("/openapi.json")
    assert result.status_code == 200
    return json.loads(result.content)


def test_is_openapi_3_1(doc: dict[str, Any]) -> None:
    assert re.fullmatch(r"3\.1\.\d+", doc["openapi"])
    validate_spec(doc)  # openapi-spec-validator: raises on any violation of OpenAPI 3.1
    assert doc["info"]["title"] and doc["info"]["version"] and doc["info"]["license"]
    assert doc["servers"] and doc["tags"]


def test_api_version_is_the_package_version(doc: dict[str, Any]) -> None:
    # docs/api.md's latest sections are version 1.3; the installed package carries the same number.
    assert doc["info"]["version"] == importlib.metadata.version("news-delivery")
    assert doc["info"]["version"].startswith("1.3.")


def test_spec_validator_catches_a_broken_document(doc: dict[str, Any]) -> None:
    broken = json.loads(json.dumps(doc))
    broken["paths"]["/api/v1/{language}/articles"]["get"]["parameters"][0]["in"] = "body"
    with pytest.raises(OpenAPIValidationError):
        validate_spec(broken)


def real_operations(app: falcon.App) -> set[tuple[str, str]]:
    operations = set()
    for route in falcon.inspect.inspect_routes(app):
        for method in route.methods:
            if method.internal or method.method in ("OPTIONS", "HEAD"):
                continue
            operations.add((route.path, method.method.lower()))
    return operations


def documented_operations(doc: dict[str, Any]) -> set[tuple[str, str]]:
    methods = {"get", "put", "post", "delete", "patch", "trace"}  # HEAD: below
    return {
        (path, method)
        for path, item in doc["paths"].items()
        for method in item
        if method in methods
    }


def test_paths_and_methods_equal_the_real_routes(app: falcon.App, doc: dict[str, Any]) -> None:
    pages = {route.path for route in ROUTES if not route.documented}  # /docs, /moderation
    real = {(path, method) for path, method in real_operations(app) if path not in pages}
    assert "/moderation" in pages and "/docs/{asset}" in pages
    assert ("/api/v1/{language}/articles/{article_id}", "get") in real  # inspection works
    assert documented_operations(doc) == real


def test_every_get_is_also_documented_as_head_without_bodies(doc: dict[str, Any]) -> None:
    for path, item in doc["paths"].items():
        assert ("head" in item) == ("get" in item), path
        if "head" in item:
            assert set(item["head"]["responses"]) == set(item["get"]["responses"]), path
            for status, response in item["head"]["responses"].items():
                assert "content" not in response, (path, status)


DECLARED = {op.operation_id: op.auth for route in ROUTES for op in route.operations}


def test_every_operation_is_described_tagged_and_secured(doc: dict[str, Any]) -> None:
    tags = {tag["name"] for tag in doc["tags"]}
    for path, item in doc["paths"].items():
        for method, op in item.items():
            assert op["summary"] and op["description"], (path, method)
            assert set(op["tags"]) <= tags, (path, method)
            # Every scheme named is declared, and a token is asked where the table says.
            declared = set(doc["components"]["securitySchemes"])
            assert {name for req in op["security"] for name in req} <= declared, (path, method)
            needs = DECLARED[op["operationId"].removesuffix("Head")]
            assert bool(op["security"]) == (needs not in (None, "author?")), (path, method)
            for parameter in op["parameters"]:
                assert parameter["description"] and "example" in parameter, (path, parameter)


def test_language_enum_is_declared_once(doc: dict[str, Any]) -> None:
    text = json.dumps(doc)
    assert text.count(json.dumps(list(LANGUAGES))) == 1
    assert doc["components"]["schemas"]["Language"]["enum"] == list(LANGUAGES)
    assert text.count('"#/components/schemas/Language"') > 20


def test_conditional_requests_are_declared(doc: dict[str, Any]) -> None:
    for path in ("/api/v1/{language}/articles", "/api/v1/{language}/articles/{article_id}"):
        op = doc["paths"][path]["get"]
        assert "If-None-Match" in {p["name"] for p in op["parameters"]}
        assert "304" in op["responses"]


def test_path_parameters_declared(doc: dict[str, Any]) -> None:
    for path, item in doc["paths"].items():
        names = set(re.findall(r"{(\w+)}", path))
        for method, operation in item.items():
            if not isinstance(operation, dict) or "responses" not in operation:
                continue
            params = operation.get("parameters", []) + item.get("parameters", [])
            declared = {p["name"] for p in params if p.get("in") == "path"}
            assert declared == names, (path, method)
            assert all(p.get("required") for p in params if p.get("in") == "path")


def test_operation_ids_unique(doc: dict[str, Any]) -> None:
    ids = [
        op["operationId"]
        for item in doc["paths"].values()
        for op in item.values()
        if isinstance(op, dict) and "operationId" in op
    ]
    assert len(ids) == len(set(ids))


def test_article_parameters_match_the_spec(doc: dict[str, Any]) -> None:
    def query(path: str) -> dict[str, dict[str, Any]]:
        params = doc["paths"][path]["get"]["parameters"]
        return {p["name"]: p for p in params if p["in"] == "query"}

    base = "/api/v1/{language}/articles"
    dated = {"from", "to", "order", "fields"}
    assert set(query(base)) == {"page", "page_size", "category"} | dated
    comments = base + "/{article_id}/comments"
    assert set(query(comments)) == {"page", "page_size", "order"}
    order = query(comments)["order"]["schema"]
    assert order["$ref"] == "#/components/schemas/CommentOrder"
    assert doc["components"]["schemas"]["CommentOrder"]["enum"] == ["newest", "oldest"]
    assert set(query(base + "/latest")) == {"limit"}
    search = query(base + "/search")
    assert set(search) == {"q", "page", "page_size", "category", "highlight"} | dated
    assert search["highlight"]["schema"] == {
        "type": "boolean",
        "default": False,
        "examples": [True],
    }
    results = doc["components"]["schemas"]["SearchResults"]
    assert "highlights" in results["properties"] and "highlights" not in results["required"]
    highlight = doc["components"]["schemas"]["Highlight"]
    assert set(highlight["required"]) == {"id", "title", "snippet"}
    for name in ("from", "to"):  # dates or RFC 3339 timestamps, as generated clients type them
        formats = [s["format"] for s in query(base)[name]["schema"]["anyOf"]]
        assert formats == ["date", "date-time"]
    schemas = doc["components"]["schemas"]
    assert schemas["ListOrder"]["enum"] == ["newest", "oldest"]
    assert schemas["SearchOrder"]["enum"] == ["relevance", "newest", "oldest"]
    assert schemas["Fields"]["enum"] == ["full", "summary"]
    for path in (base, base + "/search", comments):
        assert "Link" in doc["paths"][path]["get"]["responses"]["200"]["headers"]
    assert query(base + "/search")["q"]["required"] is True
    assert query(base)["page_size"]["schema"]["maximum"] == 100
    assert query(base + "/latest")["limit"]["schema"]["maximum"] == 50


def response_schema(doc: dict[str, Any], path: str, status: int) -> dict[str, Any]:
    responses = doc["paths"][path]["get"]["responses"]
    assert str(status) in responses, f"{path} does not document {status}"
    return responses[str(status)]["content"]["application/json"]["schema"]


# (template path, real path, query, expected status)
SAMPLES: list[tuple[str, str, str, int]] = [
    ("/api/v1/{language}/articles", "/api/v1/en/articles", "", 200),
    ("/api/v1/{language}/articles", "/api/v1/en/articles", "page=999", 200),
    ("/api/v1/{language}/articles", "/api/v1/en/articles", "fields=summary&order=oldest", 200),
    ("/api/v1/{language}/articles", "/api/v1/en/articles", "from=2026-01-01&to=2026-03-01", 200),
    ("/api/v1/{language}/articles", "/api/v1/en/articles", "to=2026-01-01&from=2026-03-01", 422),
    (
        "/api/v1/{language}/articles/search",
        "/api/v1/en/articles/search",
        "q=title&fields=summary&category=economy&order=newest",
        200,
    ),
    ("/api/v1/{language}/articles", "/api/v1/de/articles", "", 200),
    ("/api/v1/{language}/articles", "/api/v1/xx/articles", "", 400),
    ("/api/v1/{language}/articles", "/api/v1/en/articles", "page=0", 422),
    ("/api/v1/{language}/articles/latest", "/api/v1/ko/articles/latest", "", 200),
    ("/api/v1/{language}/articles/latest", "/api/v1/xx/articles/latest", "", 400),
    ("/api/v1/{language}/articles/latest", "/api/v1/en/articles/latest", "limit=51", 422),
    ("/api/v1/{language}/articles/search", "/api/v1/en/articles/search", "q=title", 200),
    ("/api/v1/{language}/articles/search", "/api/v1/en/articles/search", "", 422),
    ("/api/v1/{language}/articles/search", "/api/v1/xx/articles/search", "q=a", 400),
    ("/api/v1/{language}/articles/{article_id}", article_path("ko", KO_ID), "", 200),
    ("/api/v1/{language}/articles/{article_id}", article_path("en", "new-year"), "", 200),
    ("/api/v1/{language}/articles/{article_id}", article_path("en", "nope"), "", 404),
    ("/api/v1/{language}/articles/{article_id}", article_path("xx", "nope"), "", 400),
    ("/api/v1/{language}/categories", "/api/v1/ko/categories", "", 200),
    ("/api/v1/{language}/categories", "/api/v1/xx/categories", "", 400),
    ("/health", "/health", "", 200),
    ("/ready", "/ready", "", 200),
    ("/openapi.json", "/openapi.json", "", 200),
]


@pytest.mark.parametrize(("template", "path", "query", "status"), SAMPLES)
def test_responses_fit_documented_schemas(
    client: TestClient, doc: dict[str, Any], template: str, path: str, query: str, status: int
) -> None:
    result = client.simulate_get(path, query_string=query or None)
    assert result.status_code == status, result.text
    body = json.loads(result.content)
    schema = response_schema(doc, template, status)
    validate(body, schema, doc)
    with pytest.raises(jsonschema_rs.ValidationError):  # the schema is not vacuous
        validate([body] if not isinstance(body, list) else {}, schema, doc)


def test_schemas_name_exactly_the_contract_fields(doc: dict[str, Any]) -> None:
    from tests.helpers import ARTICLE_FIELDS, LIST_FIELDS, SUMMARY_FIELDS

    schemas = doc["components"]["schemas"]
    for name, fields in (
        ("Article", ARTICLE_FIELDS),
        ("ArticleSummary", SUMMARY_FIELDS),
        ("ArticleList", LIST_FIELDS),
    ):
        assert set(schemas[name]["properties"]) == fields
        assert set(schemas[name]["required"]) == fields


def test_every_documented_get_without_parameters_answers(
    client: TestClient, doc: dict[str, Any]
) -> None:
    """Documented parameterless operations exist and answer with a documented status."""
    for path, item in doc["paths"].items():
        if "{" in path or "get" not in item:
            continue
        result = client.simulate_get(path)
        assert str(result.status_code) in item["get"]["responses"], path


def test_error_examples_are_what_the_service_answers(client: TestClient) -> None:
    from app.openapi import ERROR_EXAMPLES

    comments = article_path("en", "new-year") + "/comments"
    answers = {
        400: client.simulate_get("/api/v1/xx/articles"),
        404: client.simulate_get(article_path("en", "nope")),
        413: client.simulate_post(
            comments, body=b"{}" + b" " * 70_000, content_type="application/json"
        ),
        415: client.simulate_post(comments, body=b"a", content_type="text/plain"),
        422: client.simulate_get("/api/v1/en/articles", query_string="page=0"),
    }
    for status, result in answers.items():
        assert result.status_code == status
        assert result.json == ERROR_EXAMPLES[status], status


def test_401_examples_are_what_the_service_answers(client: TestClient, doc: dict[str, Any]) -> None:
    """Every operation that documents a 401 answers one, without a token or with a token no
    one holds, and its example is the detail of one of those answers (the example follows
    the token the operation reads: app.comments.auth.CHALLENGE_DETAILS)."""
    values = {"language": "en", "article_id": "new-year", "comment_id": "c1", "notice_id": "n1"}
    checked = 0
    for path, item in doc["paths"].items():
        for method, op in item.items():
            if method == "head" or not isinstance(op, dict) or "401" not in op["responses"]:
                continue
            target = re.sub(r"\{(\w+)\}", lambda m: values[m.group(1)], path)
            example = op["responses"]["401"]["content"]["application/json"]["example"]
            details = set()
            for headers in ({}, {"Authorization": "Bearer no-one-holds-this"}):
                result = client.simulate_request(
                    method.upper(), target, headers=headers, json={} if method != "get" else None
                )
                if result.status_code == 401:
                    details.add(result.json["detail"])
            assert details, (op["operationId"], "no 401 without a token or with a wrong one")
            assert example["detail"] in details, (op["operationId"], example, details)
            checked += 1
    assert checked >= 10
