"""Reading and validating a create request (API contract, section 4).

Failures are 415 (not JSON), 413 (over 64 KiB) or 422 in the FastAPI shape, with every
field error of the body reported at once as FastAPI does.
"""

from __future__ import annotations

import hashlib
import re
import unicodedata
from typing import Any

import falcon
import orjson

from app.comments.model import NewComment
from app.errors import APIError, error_item, validation_error

MAX_BODY_BYTES = 64 * 1024
AUTHOR_MAX = 80
CONTENT_MAX = 5000
IDEMPOTENCY_KEY_MAX = 200
# Longer strings cannot be ids this service issued; they are answered without a query
# (and NUL, which PostgreSQL text cannot hold, never reaches the database).
ID_MAX = 200

_KEY_RE = re.compile(r"[\x20-\x7e]+")


def plausible_id(value: str) -> bool:
    return 0 < len(value) <= ID_MAX and "\x00" not in value


def read_create(req: falcon.Request, language: str, article_id: str) -> NewComment:
    body = _read_json(req)
    errors: list[dict[str, Any]] = []
    author = _text(body, "author", AUTHOR_MAX, errors, single_line=True)
    content = _text(body, "content", CONTENT_MAX, errors, single_line=False)
    parent_id = _parent_id(body, errors)
    key = _idempotency_key(req, errors)
    if errors:
        raise validation_error(*errors)
    assert author is not None and content is not None
    fingerprint = hashlib.sha256(orjson.dumps([author, content, parent_id])).hexdigest()
    return NewComment(language, article_id, author, content, parent_id, key, fingerprint)


def _read_json(req: falcon.Request) -> dict[str, Any]:
    media_type, params = falcon.parse_header(req.content_type or "")
    if media_type.lower() != "application/json":
        raise APIError(415, "Content-Type must be application/json")
    charset = params.get("charset", "utf-8").lower()
    if charset not in ("utf-8", "utf8"):
        raise APIError(415, "JSON bodies must be UTF-8")
    # Refuse by the declared length first; a body without one (chunked) is read at
    # most one byte past the limit, so an endless body is never buffered.
    too_large = APIError(
        413,
        f"Request body is larger than {MAX_BODY_BYTES} bytes",
        # The unread rest of the body must not be parsed as the next request.
        headers={"Connection": "close"},
    )
    length = req.content_length
    if length is not None and length > MAX_BODY_BYTES:
        raise too_large
    if length is None and req.env.get("wsgi.input_terminated"):
        # Chunked body: the server (gunicorn) marks its input safe to read to EOF,
        # whereas bounded_stream would read nothing without a Content-Length.
        data = req.stream.read(MAX_BODY_BYTES + 1)
    else:
        data = req.bounded_stream.read(MAX_BODY_BYTES + 1)
    if len(data) > MAX_BODY_BYTES:
        raise too_large
    if not data.strip():
        raise validation_error(error_item(("body",), "Field required", "missing", input=None))
    try:
        body = orjson.loads(data)
    except orjson.JSONDecodeError as error:
        raise validation_error(
            error_item(
                ("body", error.pos),
                "JSON decode error",
                "json_invalid",
                input={},
                ctx={"error": error.msg},
            )
        ) from None
    if not isinstance(body, dict):
        raise validation_error(
            error_item(
                ("body",),
                "Input should be a valid dictionary or object to extract fields from",
                "model_attributes_type",
                input=body,
            )
        )
    return body


def _text(
    body: dict[str, Any],
    name: str,
    maximum: int,
    errors: list[dict[str, Any]],
    *,
    single_line: bool,
) -> str | None:
    loc = ("body", name)
    if name not in body:
        errors.append(error_item(loc, "Field required", "missing", input=body))
        return None
    raw = body[name]
    if not isinstance(raw, str):
        errors.append(error_item(loc, "Input should be a valid string", "string_type", input=raw))
        return None
    # CRLF is how many clients write a newline; a lone CR stays a rejected control.
    value = raw.replace("\r\n", "\n")
    if any(unicodedata.category(ch) == "Cc" and ch not in "\n\t" for ch in value):
        errors.append(
            error_item(
                loc, "Value error, control characters are not allowed", "value_error", input=raw
            )
        )
        return None
    value = unicodedata.normalize("NFC", value).strip()
    if single_line and ("\n" in value or "\t" in value):
        errors.append(
            error_item(loc, "Value error, must be a single line", "value_error", input=raw)
        )
        return None
    if not value:
        errors.append(
            error_item(
                loc,
                "String should have at least 1 character",
                "string_too_short",
                input=raw,
                ctx={"min_length": 1},
            )
        )
        return None
    if len(value) > maximum:
        errors.append(
            error_item(
                loc,
                f"String should have at most {maximum} characters",
                "string_too_long",
                input=raw,
                ctx={"max_length": maximum},
            )
        )
        return None
    return value


def _parent_missing(parent_id: str) -> dict[str, Any]:
    return error_item(
        ("body", "parent_id"),
        "Value error, no such comment on this article",
        "value_error",
        input=parent_id,
    )


def parent_not_found(parent_id: str) -> APIError:
    return validation_error(_parent_missing(parent_id))


def _parent_id(body: dict[str, Any], errors: list[dict[str, Any]]) -> str | None:
    raw = body.get("parent_id")
    if raw is None:
        return None
    if not isinstance(raw, str):
        errors.append(
            error_item(
                ("body", "parent_id"), "Input should be a valid string", "string_type", input=raw
            )
        )
        return None
    if not plausible_id(raw):
        errors.append(_parent_missing(raw))
        return None
    return raw


def _idempotency_key(req: falcon.Request, errors: list[dict[str, Any]]) -> str | None:
    raw = req.get_header("Idempotency-Key")
    if raw is None:
        return None
    key = raw.strip()
    if not _KEY_RE.fullmatch(key) or len(key) > IDEMPOTENCY_KEY_MAX:
        errors.append(
            error_item(
                ("header", "idempotency-key"),
                f"Value error, Idempotency-Key must be 1 to {IDEMPOTENCY_KEY_MAX}"
                " printable ASCII characters",
                "value_error",
                input=raw,
            )
        )
        return None
    return key
