"""/openapi.json is OpenAPI 3.1, lists exactly the app's routes, and its schemas fit real responses.

jsonschema is not a project dependency, so `validate` below implements the subset of JSON
Schema the document uses (type, required, properties, items, $ref, enum, anyOf, minimum,
maximum, minLength, maxLength) and fails on any keyword it does not know, so a document
that grows beyond it cannot pass unchecked.
"""

from __future__ import annotations

import json
import re
from typing import Any

import falcon
import falcon.inspect
import pytest
from falcon.testing import TestClient

from tests.helpers import KO_ID, article_path

_TYPES: dict[str, Any] = {
    "object": dict,
    "array": list,
    "string": str,
    "boolean": bool,
    "null": type(None),
}
_IGNORED = {"description", "default", "format", "title", "example", "examples"}


def _is_type(value: Any, kind: str) -> bool:
    if kind == "integer":
        return isinstance(value, int) and not isinstance(value, bool)
    if kind == "number":
        return isinstance(value, int | float) and not isinstance(value, bool)
    return isinstance(value, _TYPES[kind])


def validate(value: Any, schema: dict[str, Any], doc: dict[str, Any], where: str = "$") -> None:
    """Raise AssertionError naming the JSON path where `value` breaks `schema`."""
    unknown = set(schema) - _IGNORED - {
        "$ref", "type", "required", "properties", "items", "enum", "anyOf",
        "minimum", "maximum", "minLength", "maxLength", "additionalProperties",
    }  # fmt: skip
    assert not unknown, f"{where}: validator does not know {sorted(unknown)}"
    if "$ref" in schema:
        ref = schema["$ref"]
        assert ref.startswith("#/"), ref
        target: Any = doc
        for part in ref[2:].split("/"):
            target = target[part]
        validate(value, target, doc, where)
    if "type" in schema:
        kinds = schema["type"] if isinstance(schema["type"], list) else [schema["type"]]
        assert any(_is_type(value, k) for k in kinds), f"{where}: {value!r} is not {kinds}"
    if "enum" in schema:
        assert value in schema["enum"], f"{where}: {value!r} not in {schema['enum']}"
    if "anyOf" in schema:
        errors = []
        for option in schema["anyOf"]:
            try:
                validate(value, option, doc, where)
                break
            except AssertionError as exc:
                errors.append(str(exc))
        else:
            raise AssertionError(f"{where}: matches no anyOf option: {errors}")
    if isinstance(value, dict):
        for name in schema.get("required", []):
            assert name in value, f"{where}: missing required {name!r}"
        properties = schema.get("properties", {})
        for name, sub in properties.items():
            if name in value:
                validate(value[name], sub, doc, f"{where}.{name}")
        if schema.get("additionalProperties") is False:
            extra = set(value) - set(properties)
            assert not extra, f"{where}: unexpected {sorted(extra)}"
    if isinstance(value, list) and "items" in schema:
        for i, item in enumerate(value):
            validate(item, schema["items"], doc, f"{where}[{i}]")
    if isinstance(value, int | float) and not isinstance(value, bool):
        if "minimum" in schema:
            assert value >= schema["minimum"], f"{where}: {value} < {schema['minimum']}"
        if "maximum" in schema:
            assert value <= schema["maximum"], f"{where}: {value} > {schema['maximum']}"
    if isinstance(value, str):
        if "minLength" in schema:
            assert len(value) >= schema["minLength"], where
        if "maxLength" in schema:
            assert len(value) <= schema["maxLength"], where


def test_validator_rejects_what_it_should() -> None:
    doc = {"components": {"schemas": {"N": {"type": "integer", "minimum": 1}}}}
    schema = {
        "type": "object",
        "required": ["a"],
        "properties": {"a": {"$ref": "#/components/schemas/N"}, "b": {"type": ["string", "null"]}},
    }
    validate({"a": 1, "b": None}, schema, doc)
    for bad in ({}, {"a": 0}, {"a": "1"}, {"a": True}, {"a": 1, "b": 2}, []):
        with pytest.raises(AssertionError):
            validate(bad, schema, doc)
    with pytest.raises(AssertionError, match="does not know"):
        validate(1, {"oneOf": []}, doc)


@pytest.fixture(scope="module")
def doc(client: TestClient) -> dict[str, Any]:
    result = client.simulate_get("/openapi.json")
    assert result.status_code == 200
    return json.loads(result.content)


def test_is_openapi_3_1(doc: dict[str, Any]) -> None:
    assert re.fullmatch(r"3\.1\.\d+", doc["openapi"])
    assert doc["info"]["title"] and doc["info"]["version"]
    assert isinstance(doc["paths"], dict) and doc["paths"]


def real_operations(app: falcon.App) -> set[tuple[str, str]]:
    operations = set()
    for route in falcon.inspect.inspect_routes(app):
        for method in route.methods:
            if method.internal or method.method in ("OPTIONS", "HEAD"):
                continue
            operations.add((route.path, method.method.lower()))
    return operations


def documented_operations(doc: dict[str, Any]) -> set[tuple[str, str]]:
    methods = {"get", "put", "post", "delete", "patch", "trace"}  # HEAD, OPTIONS: implied
    return {
        (path, method)
        for path, item in doc["paths"].items()
        for method in item
        if method in methods
    }


def test_paths_and_methods_equal_the_real_routes(app: falcon.App, doc: dict[str, Any]) -> None:
    real = real_operations(app)
    assert ("/api/v1/{language}/articles/{article_id}", "get") in real  # inspection works
    assert documented_operations(doc) == real


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
    assert set(query(base)) == {"page", "page_size", "category"}
    assert set(query(base + "/latest")) == {"limit"}
    assert set(query(base + "/search")) == {"q", "page", "page_size"}
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
    validate(body, response_schema(doc, template, status), doc)


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
