"""The shapes of errors: every error body is `{"detail": ...}` (app/errors.py writes them)."""

from __future__ import annotations

from pydantic import (
    BaseModel,
)

from app.models.common import wire_config


class Error(BaseModel):
    """Every error other than 422."""

    model_config = wire_config(json_schema_extra={"examples": [{"detail": "Article not found"}]})

    detail: str


class ValidationErrorItem(BaseModel):
    """One problem with a request: where (`loc`), what (`msg`), and its stable `type`."""

    model_config = wire_config()

    type: str
    """Pydantic's error type, e.g. `int_parsing`, `missing`, `string_too_long`."""
    loc: list[str | int]
    """`query`, `path`, `header` or `body`, then the parameter or field name."""
    msg: str


class ValidationError(BaseModel):
    """A 422: every problem found in the request's parameters or body."""

    model_config = wire_config(
        json_schema_extra={
            "examples": [
                {
                    "detail": [
                        {
                            "type": "greater_than_equal",
                            "loc": ["query", "page"],
                            "msg": "Input should be greater than or equal to 1",
                        }
                    ]
                }
            ]
        }
    )

    detail: list[ValidationErrorItem]
