"""Every error the API returns is a JSON object with a `detail` (docs/api.md §1).

Handlers raise `APIError` (422s via `invalid_request`); Falcon's own errors (unknown route,
wrong method, uncaught exceptions turned into 500) go through the same serializer, so no
response ever carries Falcon's default `title`/`description` body or an HTML page.
"""

from __future__ import annotations

from typing import Any

import falcon
import orjson
import pydantic

from app.bundle.errors import BundleUnavailable

JSON_TYPE = "application/json"


class APIError(falcon.HTTPError):
    """An HTTP error whose body is `{"detail": detail}`."""

    def __init__(
        self,
        status: str | int,
        detail: str | list[dict[str, Any]],
        headers: dict[str, str] | None = None,
    ) -> None:
        super().__init__(status, headers=headers)
        self.detail = detail


def unsupported_language(language: str) -> APIError:
    return APIError(400, f"Unsupported language: {language}")


def article_not_found() -> APIError:
    return APIError(404, "Article not found")


def error_items(exc: pydantic.ValidationError, where: str) -> list[dict[str, Any]]:
    """Pydantic's errors as 422 items (app.models.ValidationErrorItem), each located under
    `where`: "query", "header" or "body".

    `input` and `ctx` are left out: the documented item is `type`, `loc` and `msg`, and
    echoing the input would send a hostile body straight back.
    """
    return [
        {"type": e["type"], "loc": [where, *e["loc"]], "msg": e["msg"]}
        for e in exc.errors(include_url=False, include_input=False, include_context=False)
    ]


def invalid_request(exc: pydantic.ValidationError, where: str) -> APIError:
    return APIError(422, error_items(exc, where))


def serialize_error(req: falcon.Request, resp: falcon.Response, error: falcon.HTTPError) -> None:
    detail = getattr(error, "detail", None)
    if detail is None:
        # Falcon's built-in errors: "404 Not Found" -> "Not Found".
        detail = error.description or error.title.partition(" ")[2] or error.title
    resp.data = orjson.dumps({"detail": detail})
    resp.content_type = JSON_TYPE


def _body_read_errors() -> tuple[type[Exception], ...]:
    """What the server raises from `wsgi.input` when the request body itself is malformed."""
    try:
        from gunicorn.http.errors import NoMoreData, ParseException
    except ImportError:  # another WSGI server
        return ()
    return (ParseException, NoMoreData)


def _malformed_body(
    req: falcon.Request, resp: falcon.Response, error: Exception, params: dict[str, Any]
) -> None:
    # The client's fault (bad chunk framing, body cut short), not a 500; and the stream is
    # out of step, so the connection must not carry another request.
    resp.status = falcon.HTTP_400
    resp.content_type = JSON_TYPE
    resp.data = orjson.dumps({"detail": "Malformed request body"})
    resp.set_header("Connection", "close")


def _bundle_unavailable(
    req: falcon.Request, resp: falcon.Response, error: BaseException, params: dict[str, Any]
) -> None:
    # The objects this request needs were found damaged on disk (app.bundle.store): the
    # instance is not ready and heals once they are repaired, so the client retries.
    resp.status = falcon.HTTP_503
    resp.content_type = JSON_TYPE
    resp.data = orjson.dumps({"detail": getattr(error, "detail", "Service unavailable")})
    resp.set_header("Retry-After", "5")
    resp.set_header("Cache-Control", "no-store")


def install(app: falcon.App) -> None:
    app.set_error_serializer(serialize_error)
    app.add_error_handler(BundleUnavailable, _bundle_unavailable)
    for exc_type in _body_read_errors():
        app.add_error_handler(exc_type, _malformed_body)
