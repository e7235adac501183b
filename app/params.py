"""Query-parameter parsing with the contract's 422 errors (FastAPI/Pydantic wording).

Unknown parameters are ignored. When a parameter is repeated the last value wins, as
FastAPI does for scalar parameters.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Sequence
from dataclasses import dataclass

import falcon

from app.errors import error_item, validation_error

_INT_RE = re.compile(r"[+-]?[0-9]+")
# "Any page >= 1 is accepted, however large": gunicorn's request line (8190 bytes) bounds
# what can arrive, so allow that many digits (Python's default is 4300) and no more, which
# keeps the quadratic int<->str conversion cost bounded.
_MAX_INT_DIGITS = 10_000
if 0 < sys.get_int_max_str_digits() < _MAX_INT_DIGITS:
    sys.set_int_max_str_digits(_MAX_INT_DIGITS)

PAGE_DEFAULT = 1
PAGE_SIZE_DEFAULT, PAGE_SIZE_MAX = 20, 100
LIMIT_DEFAULT, LIMIT_MAX = 10, 50
QUERY_MAX_CHARS = 200


def raw_param(req: falcon.Request, name: str) -> str | None:
    value = req.params.get(name)
    if isinstance(value, list):
        return value[-1]
    return value


def int_param(
    req: falcon.Request, name: str, default: int, minimum: int, maximum: int | None = None
) -> int:
    raw = raw_param(req, name)
    if raw is None:
        return default
    if not _INT_RE.fullmatch(raw) or len(raw) > _MAX_INT_DIGITS:
        raise validation_error(
            error_item(
                ("query", name),
                "Input should be a valid integer, unable to parse string as an integer",
                "int_parsing",
                input=raw,
            )
        )
    value = int(raw)
    if value < minimum:
        raise validation_error(
            error_item(
                ("query", name),
                f"Input should be greater than or equal to {minimum}",
                "greater_than_equal",
                input=raw,
                ctx={"ge": minimum},
            )
        )
    if maximum is not None and value > maximum:
        raise validation_error(
            error_item(
                ("query", name),
                f"Input should be less than or equal to {maximum}",
                "less_than_equal",
                input=raw,
                ctx={"le": maximum},
            )
        )
    return value


@dataclass(frozen=True, slots=True)
class Page:
    page: int
    page_size: int

    @property
    def offset(self) -> int:
        return (self.page - 1) * self.page_size

    def list_body(self, items: Sequence[bytes | memoryview], total: int) -> bytes:
        """The ArticleList/CommentList envelope around pre-serialised items.

        Written by hand rather than with orjson: `page` may exceed 64 bits ("any page >= 1").
        """
        total_pages = -(-total // self.page_size)
        tail = b'],"total":%d,"page":%d,"page_size":%d,"total_pages":%d}' % (
            total,
            self.page,
            self.page_size,
            total_pages,
        )
        if not items:
            return b'{"items":[' + tail
        # One join over [head, item, ",", item, ..., item, tail]: a page (~100 KB) is copied
        # once, not twice as with a nested join.
        parts: list[bytes | memoryview] = [b","] * (2 * len(items) + 1)
        parts[0] = b'{"items":['
        parts[1::2] = items
        parts[-1] = tail
        return b"".join(parts)


def page_params(req: falcon.Request) -> Page:
    return Page(
        int_param(req, "page", PAGE_DEFAULT, 1),
        int_param(req, "page_size", PAGE_SIZE_DEFAULT, 1, PAGE_SIZE_MAX),
    )


def limit_param(req: falcon.Request) -> int:
    return int_param(req, "limit", LIMIT_DEFAULT, 1, LIMIT_MAX)


def search_query(req: falcon.Request) -> str:
    """`q`: trimmed, 1 to 200 characters (contract, section 3)."""
    raw = raw_param(req, "q")
    if raw is None:
        raise validation_error(error_item(("query", "q"), "Field required", "missing"))
    q = raw.strip()
    if not q:
        raise validation_error(
            error_item(
                ("query", "q"),
                "String should have at least 1 character",
                "string_too_short",
                input=raw,
                ctx={"min_length": 1},
            )
        )
    if len(q) > QUERY_MAX_CHARS:
        raise validation_error(
            error_item(
                ("query", "q"),
                f"String should have at most {QUERY_MAX_CHARS} characters",
                "string_too_long",
                input=raw,
                ctx={"max_length": QUERY_MAX_CHARS},
            )
        )
    return q


def choice_param(req: falcon.Request, name: str, choices: tuple[str, ...]) -> str:
    """An enumerated parameter; the first choice is the default."""
    raw = raw_param(req, name)
    if raw is None:
        return choices[0]
    if raw not in choices:
        expected = " or ".join(f"'{c}'" for c in choices)
        raise validation_error(
            error_item(
                ("query", name),
                f"Input should be {expected}",
                "literal_error",
                input=raw,
                ctx={"expected": expected},
            )
        )
    return raw
