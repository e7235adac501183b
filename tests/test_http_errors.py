"""Errors: order of checks, 400/404/405/422 bodies, parameter parsing (docs/api.md §1)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any
from urllib.parse import quote

import falcon
import pytest
from falcon.testing import Result, TestClient

from app.config import Settings
from app.wsgi import create_app
from tests.helpers import KO_ID, SEARCH_FIELDS, article_path

BAD_LANGUAGES = ("xx", "EN", "zh-tw", "zh_TW", "zh", "english", "한국어", "ko ", "en.json")

# Every article operation, each with bad parameters / an unknown id that must not win.
OPERATIONS: list[tuple[str, str]] = [
    ("/api/v1/{lang}/articles", "page=0&page_size=1000"),
    ("/api/v1/{lang}/articles", "category=politics"),
    ("/api/v1/{lang}/articles/latest", "limit=abc"),
    ("/api/v1/{lang}/articles/search", ""),  # q missing
    ("/api/v1/{lang}/articles/search", "q=&page=-1"),
    ("/api/v1/{lang}/articles/no-such-id", ""),
    ("/api/v1/{lang}/articles/" + quote(KO_ID), ""),
    ("/api/v1/{lang}/categories", "page=abc"),
]


def error_json(result: Result, status: int) -> Any:
    assert result.status_code == status, result.text
    assert result.headers["content-type"].startswith("application/json")
    assert result.headers["x-content-type-options"] == "nosniff"
    body = json.loads(result.content)
    assert isinstance(body, dict) and "detail" in body
    return body


@pytest.mark.parametrize("language", BAD_LANGUAGES)
@pytest.mark.parametrize(("template", "query"), OPERATIONS)
def test_language_checked_first(
    client: TestClient, language: str, template: str, query: str
) -> None:
    path = template.format(lang=quote(language))
    result = client.simulate_get(path, query_string=query or None)
    assert error_json(result, 400) == {"detail": f"Unsupported language: {language}"}


def test_language_error_names_raw_non_ascii(client: TestClient) -> None:
    result = client.simulate_get(f"/api/v1/{quote('한국어')}/articles")
    assert error_json(result, 400) == {"detail": "Unsupported language: 한국어"}
    assert "한국어".encode() in result.content and b"\\u" not in result.content


@pytest.mark.parametrize(("template", "query"), OPERATIONS)
def test_language_checked_first_on_head(client: TestClient, template: str, query: str) -> None:
    result = client.simulate_head(template.format(lang="xx"), query_string=query or None)
    assert result.status_code == 400
    assert result.content == b""


# -- 422 ------------------------------------------------------------------------------------

INVALID_PARAMS: list[tuple[str, str, str]] = [
    ("/api/v1/en/articles", "page=0", "page"),
    ("/api/v1/en/articles", "page=-1", "page"),
    ("/api/v1/en/articles", "page=abc", "page"),
    ("/api/v1/en/articles", "page=1.5", "page"),
    ("/api/v1/en/articles", "page=", "page"),
    ("/api/v1/en/articles", "page=1e3", "page"),
    ("/api/v1/en/articles", "page=0x10", "page"),
    ("/api/v1/en/articles", "page=%20", "page"),
    ("/api/v1/en/articles", "page_size=0", "page_size"),
    ("/api/v1/en/articles", "page_size=101", "page_size"),
    ("/api/v1/en/articles", "page_size=-5", "page_size"),
    ("/api/v1/en/articles", "page_size=", "page_size"),
    ("/api/v1/en/articles", "page_size=ten", "page_size"),
    ("/api/v1/en/articles", "page_size=99999999999999999999", "page_size"),
    ("/api/v1/en/articles/latest", "limit=0", "limit"),
    ("/api/v1/en/articles/latest", "limit=51", "limit"),
    ("/api/v1/en/articles/latest", "limit=-1", "limit"),
    ("/api/v1/en/articles/latest", "limit=abc", "limit"),
    ("/api/v1/en/articles/latest", "limit=2.0", "limit"),
    ("/api/v1/en/articles/latest", "limit=", "limit"),
    ("/api/v1/en/articles/search", "", "q"),
    ("/api/v1/en/articles/search", "q=", "q"),
    ("/api/v1/en/articles/search", "q=%20%20%20", "q"),
    ("/api/v1/en/articles/search", "q=%09%0A", "q"),
    ("/api/v1/en/articles/search", "q=" + "a" * 201, "q"),
    ("/api/v1/en/articles/search", "q=" + quote("경" * 201), "q"),
    ("/api/v1/en/articles/search", "q=title&page=0", "page"),
    ("/api/v1/en/articles/search", "q=title&page=abc", "page"),
    ("/api/v1/en/articles/search", "q=title&page_size=101", "page_size"),
    ("/api/v1/en/articles/search", "q=title&page_size=", "page_size"),
    ("/api/v1/ko/articles", "page=0", "page"),  # language without problems, any language
    # docs/api.md §7: dates, order, fields.
    ("/api/v1/en/articles", "from=yesterday", "from"),
    ("/api/v1/en/articles", "from=2026-13-01", "from"),
    ("/api/v1/en/articles", "from=2026-02-30", "from"),
    ("/api/v1/en/articles", "from=2026-03-01T00:00:00", "from"),  # no offset
    ("/api/v1/en/articles", "from=2026-03-01T25:00:00Z", "from"),
    ("/api/v1/en/articles", "from=20260301", "from"),
    ("/api/v1/en/articles", "from=", "from"),
    ("/api/v1/en/articles", "to=2026-3-1", "to"),
    ("/api/v1/en/articles", "to=2026-03-01T00:00Z", "to"),
    ("/api/v1/en/articles", "from=2026-03-02&to=2026-03-01", "to"),
    ("/api/v1/en/articles", "from=2026-03-01T00:00:01Z&to=2026-03-01T09:00:00%2B09:00", "to"),
    ("/api/v1/en/articles", "order=relevance", "order"),
    ("/api/v1/en/articles", "order=NEWEST", "order"),
    ("/api/v1/en/articles", "fields=compact", "fields"),
    ("/api/v1/en/articles/search", "q=title&from=x", "from"),
    ("/api/v1/en/articles/search", "q=title&to=2026-02-29", "to"),
    ("/api/v1/en/articles/search", "q=title&from=2026-01-02&to=2026-01-01", "to"),
    ("/api/v1/en/articles/search", "q=title&order=popular", "order"),
    ("/api/v1/en/articles/search", "q=title&fields=", "fields"),
    ("/api/v1/de/articles", "page_size=0", "page_size"),  # a language with no articles
]


def assert_validation_error(result: Result, name: str) -> None:
    body = error_json(result, 422)
    assert set(body) == {"detail"}
    detail = body["detail"]
    assert isinstance(detail, list) and detail
    for item in detail:
        assert {"loc", "msg", "type"} <= set(item)
        assert isinstance(item["loc"], list) and item["loc"][0] == "query"
        assert isinstance(item["msg"], str) and item["msg"]
        assert isinstance(item["type"], str) and item["type"]
    assert ["query", name] in [item["loc"] for item in detail]


@pytest.mark.parametrize(("path", "query", "name"), INVALID_PARAMS)
def test_invalid_parameter_is_422(client: TestClient, path: str, query: str, name: str) -> None:
    assert_validation_error(client.simulate_get(path, query_string=query or None), name)


@pytest.mark.parametrize(("path", "query", "name"), INVALID_PARAMS[:6])
def test_invalid_parameter_is_422_on_head(
    client: TestClient, path: str, query: str, name: str
) -> None:
    result = client.simulate_head(path, query_string=query or None)
    assert result.status_code == 422
    assert result.content == b""


def test_422_types_follow_pydantic(client: TestClient) -> None:
    def first(query: str, path: str = "/api/v1/en/articles") -> dict[str, Any]:
        result = client.simulate_get(path, query_string=query)
        return error_json(result, 422)["detail"][0]

    assert first("page=abc")["type"] == "int_parsing"
    assert first("page=0")["type"] == "greater_than_equal"
    assert first("page_size=101")["type"] == "less_than_equal"
    search = "/api/v1/en/articles/search"
    assert client.simulate_get(search).json["detail"][0]["type"] == "missing"
    assert first("q=", search)["type"] == "string_too_short"
    assert first("q=" + "a" * 201, search)["type"] == "string_too_long"


def test_invalid_params_beat_unknown_ids_and_404s(client: TestClient) -> None:
    # Parameters (422) come before existence; an unknown category is not an error at all.
    result = client.simulate_get("/api/v1/en/articles", query_string="page=0&category=nope")
    assert_validation_error(result, "page")


@pytest.mark.parametrize(
    "query", ["q=" + "a" * 200, "q=%20%20" + "a" * 200 + "%20%20", "q=a", "q=%20a%20"]
)
def test_query_length_bounds_inclusive(client: TestClient, query: str) -> None:
    result = client.simulate_get("/api/v1/en/articles/search", query_string=query)
    assert result.status_code == 200, result.text
    assert set(json.loads(result.content)) == SEARCH_FIELDS


@pytest.mark.parametrize(
    ("path", "name", "value", "count"),
    [
        ("/api/v1/en/articles", "page_size", 1, 1),
        ("/api/v1/en/articles", "page_size", 100, 100),
        ("/api/v1/en/articles/latest", "limit", 1, 1),
        ("/api/v1/en/articles/latest", "limit", 50, 50),
    ],
)
def test_size_bounds_inclusive(
    client: TestClient, records: list[dict[str, Any]], path: str, name: str, value: int, count: int
) -> None:
    result = client.simulate_get(path, query_string=f"{name}={value}")
    assert result.status_code == 200, result.text
    body = json.loads(result.content)
    items = body if isinstance(body, list) else body["items"]
    total_en = sum(1 for r in records if r["language"] == "en")
    assert len(items) == min(count, total_en)


def test_leading_zeros_are_base_10(client: TestClient) -> None:
    result = client.simulate_get("/api/v1/en/articles", query_string="page=002&page_size=05")
    assert result.status_code == 200, result.text
    assert (result.json["page"], result.json["page_size"]) == (2, 5)


def test_duplicated_params_last_wins(client: TestClient) -> None:
    def body(query: str, path: str = "/api/v1/en/articles") -> Any:
        result = client.simulate_get(path, query_string=query)
        assert result.status_code == 200, (query, result.text)
        return json.loads(result.content)

    assert body("page=5&page=2")["page"] == 2
    assert body("page=abc&page=2")["page"] == 2
    assert body("page_size=100&page_size=3")["page_size"] == 3
    assert len(body("limit=50&limit=3", "/api/v1/en/articles/latest")) == 3
    assert body("category=nope&category=politics")["total"] > 0
    assert body("category=politics&category=")["total"] == body("")["total"]
    assert_validation_error(
        client.simulate_get("/api/v1/en/articles", query_string="page=2&page=abc"), "page"
    )


def test_unknown_params_ignored(client: TestClient) -> None:
    plain = client.simulate_get("/api/v1/en/articles", query_string="page=2")
    noisy = client.simulate_get(
        "/api/v1/en/articles", query_string="page=2&foo=bar&limit=0&q=&sort=desc&Page=0"
    )
    assert noisy.status_code == 200
    assert noisy.content == plain.content
    latest = client.simulate_get("/api/v1/en/articles/latest", query_string="page=0&x=1")
    assert latest.status_code == 200
    item = client.simulate_get(article_path("en", "12345"), query_string="page=abc&limit=0")
    assert item.status_code == 200 and item.json["id"] == "12345"
    cats = client.simulate_get("/api/v1/en/categories", query_string="page=abc")
    assert cats.status_code == 200


# -- 404 / 405 ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "path",
    [
        "/",
        "/nope",
        "/api",
        "/api/v1",
        "/api/v1/en",
        "/api/v2/en/articles",
        "/api/v1/en/article",
        "/api/v1/en/articles/a/b",
        "/api/v1/en/categories/extra",
        "/api/v1/xx/unknown",
        "/favicon.ico",
        "/openapi.yaml",
    ],
)
def test_unknown_path_is_404_not_found(client: TestClient, path: str) -> None:
    for result in (client.simulate_get(path), client.simulate_post(path)):
        assert error_json(result, 404) == {"detail": "Not Found"}
    head = client.simulate_head(path)
    assert head.status_code == 404 and head.content == b""


@pytest.mark.parametrize(
    "path",
    [
        "/api/v1/en/articles",
        "/api/v1/en/articles/latest",
        "/api/v1/en/articles/search",
        "/api/v1/en/articles/12345",
        "/api/v1/en/categories",
        "/health",
        "/ready",
        "/openapi.json",
    ],
)
@pytest.mark.parametrize("method", ["POST", "PUT", "PATCH", "DELETE"])
def test_wrong_method_is_405(client: TestClient, path: str, method: str) -> None:
    result = client.simulate_request(method, path, body=b"{}")
    body = error_json(result, 405)
    assert isinstance(body["detail"], str) and body["detail"]
    allow = {m.strip() for m in result.headers["allow"].split(",")}
    assert {"GET", "HEAD"} <= allow
    assert method not in allow


def test_uncaught_exception_is_json_500(bundle: tuple[Path, str], tmp_path: Path) -> None:
    """Falcon's own 500 goes through the same serializer: JSON `detail`, no HTML, no title."""

    class Broken:
        def on_get(self, req: falcon.Request, resp: falcon.Response) -> None:
            raise RuntimeError("boom")

    app = create_app(Settings(bundle_dir=bundle[0], comments_dsn=f"sqlite:///{tmp_path}/c.sqlite3"))
    app.add_route("/broken", Broken())
    result = TestClient(app).simulate_get("/broken")
    body = error_json(result, 500)
    assert body == {"detail": "Internal Server Error"}
    assert b"boom" not in result.content
