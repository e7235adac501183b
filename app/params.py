"""Query parameters, validated by the models of app/models/ into the 422 of docs/api.md.

Unknown parameters are ignored. When a scalar parameter is repeated the last value wins, as
FastAPI does; a list parameter (`article_id`) takes every value.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, TypeVar

import falcon
import pydantic

from app.errors import invalid_request
from app.models import PageQuery

Query = TypeVar("Query", bound=pydantic.BaseModel)


class _Plan:
    """What `parse` needs to know about one query model, worked out once."""

    def __init__(self, model: type[pydantic.BaseModel]) -> None:
        self.fields = tuple(
            (field.alias or name, getattr(field.annotation, "__origin__", None) is list)
            for name, field in model.model_fields.items()
        )
        self.names = frozenset(name for name, _ in self.fields)
        required = any(field.is_required() for field in model.model_fields.values())
        # A request without any of the model's parameters needs no validation at all.
        self.defaults = None if required else model.model_validate({})


_PLANS: dict[type[pydantic.BaseModel], _Plan] = {}


def _plan(model: type[pydantic.BaseModel]) -> _Plan:
    return _PLANS.get(model) or _PLANS.setdefault(model, _Plan(model))


def names(model: type[pydantic.BaseModel]) -> frozenset[str]:
    """The query parameter names `model` reads (aliases where it has them)."""
    return _plan(model).names


def parse(req: falcon.Request, model: type[Query]) -> Query:
    plan = _plan(model)
    given: dict[str, Any] = {}
    params = req.params
    if params:
        for name, is_list in plan.fields:
            value = params.get(name)
            if value is None:
                continue
            if is_list:
                given[name] = value if isinstance(value, list) else [value]
            else:
                given[name] = value[-1] if isinstance(value, list) else value
    if not given and plan.defaults is not None:
        return plan.defaults  # type: ignore[return-value]
    try:
        return model.model_validate(given)
    except pydantic.ValidationError as exc:
        raise invalid_request(exc, "query") from None


def int_text(value: int) -> str:
    """Decimal digits of any int: `%d` refuses over 4,300 digits (sys.int_info), and any
    page >= 1 is valid, however large."""
    if value < _CHUNK_LIMIT:
        return str(value)
    high, low = divmod(value, _CHUNK_LIMIT)
    return int_text(high) + str(low).zfill(_CHUNK_DIGITS)


_CHUNK_DIGITS = 4000
_CHUNK_LIMIT = 10**_CHUNK_DIGITS


def page_key(page: PageQuery) -> object:
    """The page number as part of a cache key: the int itself when `repr` can print it."""
    return page.page if page.page < _CHUNK_LIMIT else int_text(page.page)


LIST_HEAD = b'{"items":['


def list_tail(page: PageQuery, total: int, extra: bytes = b"") -> bytes:
    """What follows the items of an ArticleList/CommentList envelope (after LIST_HEAD).
    `extra` is more members (`,"name":value`) written after `total_pages` (search's facets)."""
    total_pages = -(-total // page.page_size)
    number = page.page
    page_digits = b"%d" % number if number < _CHUNK_LIMIT else int_text(number).encode()
    return b'],"total":%d,"page":%b,"page_size":%d,"total_pages":%d%b}' % (
        total,
        page_digits,
        page.page_size,
        total_pages,
        extra,
    )


def list_body(page: PageQuery, items: Sequence[bytes | memoryview], total: int) -> bytes:
    """The ArticleList/CommentList envelope (app.models) around pre-serialised items.

    Written by hand rather than by the model: the items are already bytes, and `page` may
    exceed 64 bits. tests/test_models.py checks it against the declared model. Articles are
    sent through app.delivery, with the same LIST_HEAD and list_tail.
    """
    tail = list_tail(page, total)
    if not items:
        return LIST_HEAD + tail
    # One join over [head, item, ",", item, ..., item, tail]: a page (~100 KB) is copied
    # once, not twice as with a nested join.
    parts: list[bytes | memoryview] = [b","] * (2 * len(items) + 1)
    parts[0] = LIST_HEAD
    parts[1::2] = items
    parts[-1] = tail
    return b"".join(parts)
