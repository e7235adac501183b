"""The shapes of the operations routes: health, readiness and the OpenAPI document."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import (
    BaseModel,
)

from app.models.common import wire_config


class Health(BaseModel):
    """The process answers."""

    model_config = wire_config()

    status: Literal["ok"]


class Ready(BaseModel):
    """The bundle is loaded and the comment store answers."""

    # `rejected_bundle` is written only when there is one.
    model_config = wire_config(json_schema_serialization_defaults_required=False)

    status: Literal["ready"]
    bundle: str
    """Id of the bundle being served."""
    rejected_bundle: str | None = None
    """Set when a newer bundle was refused; the named bundle keeps serving."""


class OpenAPIDocument(BaseModel):
    """An OpenAPI 3.1 document (https://spec.openapis.org/oas/v3.1.0)."""

    model_config = wire_config(extra="allow")

    openapi: str
    info: dict[str, Any]
    paths: dict[str, Any]
    components: dict[str, Any]


# -- query parameters --------------------------------------------------------------------
