"""Every error the API returns is a JSON object with a `detail` (API contract, section 1).

Handlers raise `APIError` (or a `validation_error`); Falcon's own errors (unknown route,
wrong method, uncaught exceptions turned into 500) go through the same serializer, so no
response ever carries Falcon's default `title`/`description` body or an HTML page.
"""

from __future__ import annotations

from typing import Any

import falcon
import orjson

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


def error_item(loc: tuple[str | int, ...], msg: str, kind: str, **extra: Any) -> dict[str, Any]:
    """One entry of a 422 `detail` list, in the FastAPI/Pydantic shape clients parse."""
    item: dict[str, Any] = {"type": kind, "loc": list(loc), "msg": msg}
    item.update(extra)
    return item


def validation_error(*items: dict[str, Any]) -> APIError:
    return APIError(422, list(items))


def serialize_error(req: falcon.Request, resp: falcon.Response, error: falcon.HTTPError) -> None:
    detail = getattr(error, "detail", None)
    if detail is None:
        # Falcon's built-in errors: "404 Not Found" -> "Not Found".
        detail = error.description or error.title.partition(" ")[2] or error.title
    resp.data = orjson.dumps({"detail": detail})
    resp.content_type = JSON_TYPE


def install(app: falcon.App) -> None:
    app.set_error_serializer(serialize_error)
