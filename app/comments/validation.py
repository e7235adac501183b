"""Reading and validating a create request (docs/api.md §4).

Failures are 415 (not JSON), 413 (over 64 KiB) or 422: Pydantic validates the body and the
Idempotency-Key header with app.comments.comment_wire.CommentCreate and
CommentCreateHeaders, reporting every problem at once as FastAPI does.
"""

from __future__ import annotations

import hashlib
from typing import Any

import falcon
import orjson
import pydantic
from pydantic_core import InitErrorDetails

from app.comments.comment_wire import CommentCreate, CommentCreateHeaders
from app.comments.model import NewComment
from app.errors import APIError, error_items, invalid_request
from app.models import ID_MAX

MAX_BODY_BYTES = 64 * 1024


def plausible_id(value: str) -> bool:
    """Longer strings cannot be ids this service issued; they are answered without a query
    (and NUL, which PostgreSQL text cannot hold, never reaches the database)."""
    return 0 < len(value) <= ID_MAX and "\x00" not in value


def read_json(req: falcon.Request, model: type[pydantic.BaseModel]) -> Any:
    """The request body validated by `model`, or the 415, 413 or 422 that explains why not."""
    data = _read_body(req)
    try:
        return model.model_validate_json(data)
    except pydantic.ValidationError as exc:
        raise invalid_request(exc, "body") from None


def read_create(req: falcon.Request, language: str, article_id: str) -> NewComment:
    problems: list[dict[str, Any]] = []
    body = headers = None
    try:
        body = CommentCreate.model_validate_json(_read_body(req))
    except pydantic.ValidationError as exc:
        problems += error_items(exc, "body")
    key = req.get_header("Idempotency-Key")
    try:
        headers = CommentCreateHeaders.model_validate(
            {} if key is None else {"idempotency-key": key}
        )
    except pydantic.ValidationError as exc:
        problems += error_items(exc, "header")
    if problems:
        raise APIError(422, problems)
    assert body is not None and headers is not None
    if body.parent_id is not None and not plausible_id(body.parent_id):
        raise parent_not_found(body.parent_id)  # never a stored id, so no query
    fingerprint = hashlib.sha256(
        orjson.dumps([body.author, body.content, body.parent_id])
    ).hexdigest()
    return NewComment(
        language,
        article_id,
        body.author,
        body.content,
        body.parent_id,
        headers.idempotency_key,
        fingerprint,
    )


def parent_not_found(parent_id: str) -> APIError:
    """The 422 for a `parent_id` that is not a comment of the article (known only once the
    store has looked), worded by Pydantic like every other field error."""
    error = ValueError("no such comment on this article")
    details: list[InitErrorDetails] = [
        {"type": "value_error", "loc": ("parent_id",), "input": parent_id, "ctx": {"error": error}}
    ]
    return invalid_request(
        pydantic.ValidationError.from_exception_data(CommentCreate.__name__, details), "body"
    )


def _read_body(req: falcon.Request) -> bytes:
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
    return data
