"""The OpenAPI 3.1 description served at /openapi.json; tests keep it true to the routes."""

from __future__ import annotations

import copy
from typing import Any

from app.languages import LANGUAGES
from app.params import LIMIT_DEFAULT, LIMIT_MAX, PAGE_SIZE_DEFAULT, PAGE_SIZE_MAX, QUERY_MAX_CHARS


def _ref(name: str) -> dict[str, str]:
    return {"$ref": f"#/components/schemas/{name}"}


def _json(schema: dict[str, Any], description: str) -> dict[str, Any]:
    return {"description": description, "content": {"application/json": {"schema": schema}}}


def _error(description: str) -> dict[str, Any]:
    return _json(_ref("Error"), description)


_NULLABLE_STR = {"type": ["string", "null"]}
_TIMESTAMP = {"type": "string", "format": "date-time"}
_CACHE_HEADERS = {
    "ETag": {"schema": {"type": "string"}, "description": "entity tag for If-None-Match"},
    "Cache-Control": {"schema": {"type": "string"}, "description": "public, max-age=N"},
}

SCHEMAS: dict[str, Any] = {
    "Article": {
        "type": "object",
        "required": [
            "id",
            "language",
            "title",
            "summary",
            "content",
            "category",
            "tags",
            "author",
            "image_url",
            "published_at",
            "updated_at",
        ],
        "properties": {
            "id": {"type": "string"},
            "language": {"type": "string", "enum": list(LANGUAGES)},
            "title": {"type": "string"},
            "summary": {"type": "string"},
            "content": {"type": "string"},
            "category": {"type": "string"},
            "tags": {"type": "array", "items": {"type": "string"}},
            "author": _NULLABLE_STR,
            "image_url": _NULLABLE_STR,
            "published_at": _TIMESTAMP,
            "updated_at": _TIMESTAMP,
        },
    },
    "ArticleSummary": {
        "type": "object",
        "required": [
            "id",
            "language",
            "title",
            "summary",
            "category",
            "image_url",
            "published_at",
        ],
        "properties": {
            "id": {"type": "string"},
            "language": {"type": "string", "enum": list(LANGUAGES)},
            "title": {"type": "string"},
            "summary": {"type": "string"},
            "category": {"type": "string"},
            "image_url": _NULLABLE_STR,
            "published_at": _TIMESTAMP,
        },
    },
    "ArticleList": {
        "type": "object",
        "required": ["items", "total", "page", "page_size", "total_pages"],
        "properties": {
            "items": {"type": "array", "items": _ref("Article")},
            "total": {"type": "integer", "minimum": 0},
            "page": {"type": "integer", "minimum": 1},
            "page_size": {"type": "integer", "minimum": 1, "maximum": PAGE_SIZE_MAX},
            "total_pages": {"type": "integer", "minimum": 0},
        },
    },
    "Error": {
        "type": "object",
        "required": ["detail"],
        "properties": {"detail": {"type": "string"}},
    },
    "ValidationError": {
        "type": "object",
        "required": ["detail"],
        "properties": {
            "detail": {
                "type": "array",
                "items": {
                    "type": "object",
                    "required": ["loc", "msg", "type"],
                    "properties": {
                        "loc": {
                            "type": "array",
                            "items": {"anyOf": [{"type": "string"}, {"type": "integer"}]},
                        },
                        "msg": {"type": "string"},
                        "type": {"type": "string"},
                    },
                },
            }
        },
    },
}

LANGUAGE_PARAM = {
    "name": "language",
    "in": "path",
    "required": True,
    "description": "One of the nine language codes; anything else is a 400.",
    "schema": {"type": "string", "enum": list(LANGUAGES)},
}
PAGE_PARAMS = [
    {
        "name": "page",
        "in": "query",
        "required": False,
        "schema": {"type": "integer", "minimum": 1, "default": 1},
    },
    {
        "name": "page_size",
        "in": "query",
        "required": False,
        "schema": {
            "type": "integer",
            "minimum": 1,
            "maximum": PAGE_SIZE_MAX,
            "default": PAGE_SIZE_DEFAULT,
        },
    },
]
COMMON_ERRORS = {
    "400": _error("Unsupported language"),
    "422": _json(_ref("ValidationError"), "Invalid parameter"),
}


def _get(
    summary: str,
    parameters: list[dict[str, Any]],
    ok: dict[str, Any],
    errors: dict[str, Any],
    operation_id: str,
) -> dict[str, Any]:
    return {
        "get": {
            "operationId": operation_id,
            "summary": summary,
            "parameters": parameters,
            "responses": {"200": ok, "304": {"description": "Not modified"}, **errors},
        }
    }


def _cached(
    schema: dict[str, Any], description: str, comment_on: str | None = None
) -> dict[str, Any]:
    """A cacheable 200; `comment_on` is the runtime expression of an article id in the body,
    linking the response to the comment operations on that article."""
    response = {**_json(schema, description), "headers": _CACHE_HEADERS}
    if comment_on is not None:
        article = {"language": "$request.path.language", "article_id": comment_on}
        response["links"] = {
            "CommentOnArticle": {"operationId": "createComment", "parameters": article},
            "ListArticleComments": {"operationId": "listComments", "parameters": article},
        }
    return response


ARTICLE_PATHS: dict[str, Any] = {
    "/api/v1/{language}/articles": _get(
        "List articles, newest first",
        [
            LANGUAGE_PARAM,
            *PAGE_PARAMS,
            {
                "name": "category",
                "in": "query",
                "required": False,
                "description": "Exact, case-sensitive category; empty means no filter.",
                "schema": {"type": "string"},
            },
        ],
        _cached(_ref("ArticleList"), "A page of articles", "$response.body#/items/0/id"),
        COMMON_ERRORS,
        "listArticles",
    ),
    "/api/v1/{language}/articles/latest": _get(
        "Latest articles",
        [
            LANGUAGE_PARAM,
            {
                "name": "limit",
                "in": "query",
                "required": False,
                "schema": {
                    "type": "integer",
                    "minimum": 1,
                    "maximum": LIMIT_MAX,
                    "default": LIMIT_DEFAULT,
                },
            },
        ],
        _cached(
            {"type": "array", "items": _ref("ArticleSummary")},
            "Newest articles",
            "$response.body#/0/id",
        ),
        COMMON_ERRORS,
        "latestArticles",
    ),
    "/api/v1/{language}/articles/search": _get(
        "Search articles by keyword",
        [
            LANGUAGE_PARAM,
            {
                "name": "q",
                "in": "query",
                "required": True,
                "description": "Keywords; every term must match. Trimmed.",
                "schema": {"type": "string", "minLength": 1, "maxLength": QUERY_MAX_CHARS},
            },
            *PAGE_PARAMS,
        ],
        _cached(_ref("ArticleList"), "A page of matching articles, most relevant first"),
        COMMON_ERRORS,
        "searchArticles",
    ),
    "/api/v1/{language}/articles/{article_id}": _get(
        "Get one article",
        [
            LANGUAGE_PARAM,
            {"name": "article_id", "in": "path", "required": True, "schema": {"type": "string"}},
        ],
        _cached(_ref("Article"), "The article", "$response.body#/id"),
        {"400": _error("Unsupported language"), "404": _error("Article not found")},
        "getArticle",
    ),
    "/api/v1/{language}/categories": _get(
        "Categories of a language",
        [LANGUAGE_PARAM],
        _cached({"type": "array", "items": {"type": "string"}}, "Categories, code-point order"),
        {"400": _error("Unsupported language")},
        "listCategories",
    ),
}

_STATUS = {
    "type": "object",
    "required": ["status"],
    "properties": {"status": {"type": "string"}},
}

OPS_PATHS: dict[str, Any] = {
    "/health": _get("Liveness", [], _json(_STATUS, "Process is running"), {}, "health"),
    "/ready": _get(
        "Readiness",
        [],
        _json(
            {
                **_STATUS,
                "required": ["status", "bundle"],
                "properties": {"status": {"type": "string"}, "bundle": {"type": "string"}},
            },
            "Bundle loaded and comment store answering",
        ),
        {"503": _error("Not ready")},
        "ready",
    ),
    "/openapi.json": _get(
        "This document", [], _json({"type": "object"}, "OpenAPI 3.1 document"), {}, "openapi"
    ),
}
for _item in OPS_PATHS.values():
    del _item["get"]["responses"]["304"]  # these are never conditional


# The server answers this itself, before any route, for a request line over its limit.
_URI_TOO_LONG = _error("Request line too long")


def openapi_document(extra_paths: dict[str, Any]) -> dict[str, Any]:
    """The whole document; `extra_paths` may carry a "components" key to merge."""
    extra = copy.deepcopy(extra_paths)
    components = extra.pop("components", {})
    schemas = {**SCHEMAS, **components.get("schemas", {})}
    paths = copy.deepcopy({**ARTICLE_PATHS, **extra, **OPS_PATHS})
    for item in paths.values():
        for operation in item.values():
            operation["responses"].setdefault("414", _URI_TOO_LONG)
    return {
        "openapi": "3.1.0",
        "info": {
            "title": "News article delivery service",
            "version": "1.0.0",
            "description": "Read-only news articles in nine languages, with comments.",
        },
        "paths": paths,
        "components": {**components, "schemas": schemas},
    }
