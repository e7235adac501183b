"""OpenAPI 3.1 description of the comment operations.

`openapi_paths()` returns path items keyed by path template plus one extra key,
"components", whose schemas and security schemes the app factory merges into the
document's own `components`. Errors use the document's shared `Error` and
`ValidationError` schemas; the comment schemas' names start with "Comment" or "Admin".
"""

from __future__ import annotations

import copy
from typing import Any

from app.comments.validation import AUTHOR_MAX, CONTENT_MAX, IDEMPOTENCY_KEY_MAX, MAX_BODY_BYTES
from app.languages import LANGUAGES
from app.openapi import LANGUAGE_PARAM, PAGE_PARAMS

BASE = "/api/v1/{language}"
LIST_PATH = BASE + "/articles/{article_id}/comments"
COUNT_PATH = BASE + "/articles/{article_id}/comments/count"
ITEM_PATH = BASE + "/articles/{article_id}/comments/{comment_id}"
COUNTS_PATH = BASE + "/comments/counts"

_JSON = "application/json"


def _ref(name: str) -> dict[str, str]:
    return {"$ref": f"#/components/schemas/{name}"}


def _path_param(name: str, description: str, **schema: Any) -> dict[str, Any]:
    return {
        "name": name,
        "in": "path",
        "required": True,
        "description": description,
        "schema": {"type": "string", **schema},
    }


_LANGUAGE = LANGUAGE_PARAM
_ARTICLE = _path_param("article_id", "Article id (percent-encoded in the path).")
_COMMENT = _path_param("comment_id", "Comment id.")


def _ok(description: str, schema: str) -> dict[str, Any]:
    return {"description": description, "content": {_JSON: {"schema": _ref(schema)}}}


def _error(description: str) -> dict[str, Any]:
    return _ok(description, "Error")  # the document's shared {"detail": str} schema


_LANGUAGE_ERROR = _error("Unsupported language.")
_VALIDATION = _ok("Invalid parameters or body.", "ValidationError")
_NO_ARTICLE = _error("Article not found.")
_UNAVAILABLE = _error("Comment store unavailable.")
_NO_STORE = {"Cache-Control": {"description": "Always `no-store`.", "schema": {"type": "string"}}}


def _operation(
    op_id: str, summary: str, params: list[dict[str, Any]], responses: dict[str, Any], **extra: Any
) -> dict[str, Any]:
    responses = copy.deepcopy(responses)  # the shared response objects stay untouched
    for response in responses.values():
        response.setdefault("headers", {}).update(_NO_STORE)
    return {
        "operationId": op_id,
        "summary": summary,
        "tags": ["comments"],
        "parameters": params,
        "responses": responses,
        **extra,
    }


def _with_head(get: dict[str, Any]) -> dict[str, Any]:
    """GET plus a HEAD answering the same status and headers without a body."""
    head = copy.deepcopy(get)
    head["operationId"] = get["operationId"] + "Head"
    head["summary"] = get["summary"] + " (headers only)"
    for response in head["responses"].values():
        response.pop("content", None)
    return {"get": get, "head": head}


def _created_links() -> dict[str, Any]:
    """What a client (or a stateful fuzzer) can do next with the comment it created."""
    same_article = {
        "language": "$request.path.language",
        "article_id": "$request.path.article_id",
    }
    this_comment = {**same_article, "comment_id": "$response.body#/id"}
    return {
        "GetComment": {"operationId": "getComment", "parameters": this_comment},
        "DeleteComment": {"operationId": "deleteComment", "parameters": this_comment},
        "ListComments": {"operationId": "listComments", "parameters": same_article},
        "CountComments": {"operationId": "countComments", "parameters": same_article},
        "CountCommentsBatch": {"operationId": "countCommentsBatch", "parameters": same_article},
        "ReplyToComment": {
            "operationId": "createComment",
            "parameters": same_article,
            "requestBody": {
                "author": "reader",
                "content": "a reply",
                "parent_id": "$response.body#/id",
            },
        },
    }


def openapi_paths() -> dict[str, Any]:
    page = PAGE_PARAMS
    idempotency_key = {
        "name": "Idempotency-Key",
        "in": "header",
        "required": False,
        "description": "A retry with the same key for the same article returns the comment"
        " created the first time (201) and creates nothing.",
        "schema": {"type": "string", "minLength": 1, "maxLength": IDEMPOTENCY_KEY_MAX},
    }
    created_headers = {
        "Location": {"description": "Path of the comment.", "schema": {"type": "string"}},
        "Idempotent-Replayed": {
            "description": "`true` when an Idempotency-Key matched an earlier create.",
            "schema": {"type": "string"},
        },
    }
    article = [_LANGUAGE, _ARTICLE]
    paths: dict[str, Any] = {
        LIST_PATH: {
            **_with_head(
                _operation(
                    "listComments",
                    "List the comments of an article",
                    [*article, *page],
                    {
                        "200": _ok("A page of comments.", "CommentList"),
                        "400": _LANGUAGE_ERROR,
                        "404": _NO_ARTICLE,
                        "422": _VALIDATION,
                        "503": _UNAVAILABLE,
                    },
                )
            ),
            "post": _operation(
                "createComment",
                "Comment on an article",
                [*article, idempotency_key],
                {
                    "201": {
                        **_ok("The comment, durably stored.", "Comment"),
                        "headers": created_headers,
                        "links": _created_links(),
                    },
                    "400": _LANGUAGE_ERROR,
                    "404": _NO_ARTICLE,
                    "409": _error(
                        "Idempotency-Key reused for a different comment, or its"
                        " comment was deleted."
                    ),
                    "413": _error(f"Body larger than {MAX_BODY_BYTES} bytes."),
                    "415": _error("Content-Type is not application/json."),
                    "422": _VALIDATION,
                    "429": {
                        **_error("Rate limit exceeded."),
                        "headers": {
                            "Retry-After": {
                                "description": "Seconds to wait.",
                                "schema": {"type": "integer"},
                            }
                        },
                    },
                    "503": _UNAVAILABLE,
                },
                requestBody={
                    "required": True,
                    "content": {_JSON: {"schema": _ref("CommentCreate")}},
                },
            ),
        },
        COUNT_PATH: _with_head(
            _operation(
                "countComments",
                "Count the comments of an article",
                article,
                {
                    "200": _ok("The number of comments list would return.", "CommentCount"),
                    "400": _LANGUAGE_ERROR,
                    "404": _NO_ARTICLE,
                    "503": _UNAVAILABLE,
                },
            )
        ),
        ITEM_PATH: {
            **_with_head(
                _operation(
                    "getComment",
                    "Get one comment",
                    [*article, _COMMENT],
                    {
                        "200": _ok("The comment.", "Comment"),
                        "400": _LANGUAGE_ERROR,
                        "404": _error("Article not found, or Comment not found."),
                        "503": _UNAVAILABLE,
                    },
                )
            ),
            "delete": _operation(
                "deleteComment",
                "Delete a comment (administrator)",
                [*article, _COMMENT],
                {
                    "204": {"description": "Deleted."},
                    "400": _LANGUAGE_ERROR,
                    "401": _error("Missing or wrong admin token, or deletion disabled."),
                    "404": _error("Article not found, or Comment not found."),
                    "503": _UNAVAILABLE,
                },
                security=[{"AdminBearer": []}],
            ),
        },
        COUNTS_PATH: _with_head(
            _operation(
                "countCommentsBatch",
                "Count the comments of several articles",
                [
                    _LANGUAGE,
                    {
                        "name": "article_id",
                        "in": "query",
                        "required": True,
                        "style": "form",
                        "explode": True,
                        "description": "Repeat 1 to 100 times.",
                        "schema": {
                            "type": "array",
                            "items": {"type": "string"},
                            "minItems": 1,
                            "maxItems": 100,
                        },
                    },
                ],
                {
                    "200": _ok(
                        "Counts; null for an id that is not an article of the language.",
                        "CommentCounts",
                    ),
                    "400": _LANGUAGE_ERROR,
                    "422": _VALIDATION,
                    "503": _UNAVAILABLE,
                },
            )
        ),
    }
    paths["components"] = {
        "schemas": _schemas(),
        "securitySchemes": {
            "AdminBearer": {
                "type": "http",
                "scheme": "bearer",
                "description": "The value of NEWS_ADMIN_TOKEN.",
            }
        },
    }
    return paths


def _schemas() -> dict[str, Any]:
    string, integer = {"type": "string"}, {"type": "integer"}
    nullable_string = {"type": ["string", "null"]}
    comment_fields = [
        "id",
        "article_id",
        "language",
        "parent_id",
        "author",
        "content",
        "created_at",
    ]
    return {
        "Comment": {
            "type": "object",
            "required": comment_fields,
            "properties": {
                "id": string,
                "article_id": string,
                "language": {"type": "string", "enum": list(LANGUAGES)},
                "parent_id": nullable_string,
                "author": string,
                "content": string,
                "created_at": {
                    "type": "string",
                    "format": "date-time",
                    "description": "RFC 3339 UTC with fractional seconds.",
                },
            },
        },
        "CommentList": {
            "type": "object",
            "required": ["items", "total", "page", "page_size", "total_pages"],
            "properties": {
                "items": {"type": "array", "items": _ref("Comment")},
                "total": integer,
                "page": integer,
                "page_size": integer,
                "total_pages": integer,
            },
        },
        "CommentCreate": {
            "type": "object",
            "required": ["author", "content"],
            "description": "Lengths count characters after trimming and NFC normalisation;"
            " control characters other than newline and tab are rejected, and the author"
            " must be a single line. Unknown fields are ignored.",
            "properties": {
                "author": {"type": "string", "minLength": 1, "maxLength": AUTHOR_MAX},
                "content": {"type": "string", "minLength": 1, "maxLength": CONTENT_MAX},
                "parent_id": {**nullable_string, "description": "A comment of the same article."},
            },
        },
        "CommentCount": {
            "type": "object",
            "required": ["article_id", "language", "count"],
            "properties": {"article_id": string, "language": string, "count": integer},
        },
        "CommentCounts": {
            "type": "object",
            "required": ["language", "counts"],
            "properties": {
                "language": string,
                "counts": {"type": "object", "additionalProperties": {"type": ["integer", "null"]}},
            },
        },
    }
