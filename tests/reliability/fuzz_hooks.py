"""schemathesis hooks for the contract fuzz run (loaded via SCHEMATHESIS_HOOKS).

`error_contract` adds the rules of docs/api.md §1 that no OpenAPI schema can state: every
response carries nosniff, and every error is a JSON object with `detail` that shows no
stack trace or server path. The document itself is used as served: its links drive the
stateful phase (article -> create comment -> get/list/count/delete/reply).
"""

from __future__ import annotations

import ast
import functools
import json
import threading
from typing import Any

import schemathesis

# CPython 3.11 keeps the recursion depth of its AST conversion in state that threads share,
# so two `ast.parse` calls at once can fail with "SystemError: AST constructor recursion
# depth mismatch". Hypothesis parses source to describe the filters schemathesis builds, in
# every worker thread of the run; one lock makes those parses take turns.
_AST_LOCK = threading.Lock()
_parse = ast.parse


@functools.wraps(_parse)
def _serial_parse(*args: Any, **kwargs: Any) -> Any:
    with _AST_LOCK:
        return _parse(*args, **kwargs)


ast.parse = _serial_parse

# Text that would mean an internal detail leaked into an answer.
LEAK_MARKERS = ("Traceback", 'File "', "/work/", "site-packages", '.py"', "Exception:")


@schemathesis.check
def error_contract(ctx: Any, response: Any, case: Any) -> bool | None:
    assert response.headers.get("x-content-type-options", [""])[0] == "nosniff", (
        "response lacks X-Content-Type-Options: nosniff"
    )
    if response.status_code < 400:
        return None
    text = response.text
    for marker in LEAK_MARKERS:
        assert marker not in text, f"error body leaks internals ({marker!r}): {text[:300]}"
    if case.method.upper() == "HEAD":
        return None
    try:
        body = json.loads(text)
    except ValueError:
        raise AssertionError(f"error body is not JSON: {text[:300]!r}") from None
    assert isinstance(body, dict) and "detail" in body, f"error body has no detail: {text[:300]}"
    return None


_COMMENTS = "/api/v1/{language}/articles/{article_id}/comments"


@functools.cache
def _comment_validators() -> tuple[Any, Any]:
    """The document's CommentCreate body and Idempotency-Key schemas, as validators."""
    import jsonschema

    from app.openapi import openapi_document
    from app.routes import ROUTES

    document = openapi_document(ROUTES)
    body = document["components"]["schemas"]["CommentCreate"]
    parameters = document["paths"][_COMMENTS]["post"]["parameters"]
    (header,) = [p["schema"] for p in parameters if p["in"] == "header"]
    return jsonschema.Draft202012Validator(body), jsonschema.Draft202012Validator(header)


@schemathesis.check
def comment_rules_stated(ctx: Any, response: Any, case: Any) -> bool | None:
    """A create request whose body and Idempotency-Key the document allows is refused with a
    422 only for a `parent_id` that names no comment of the article (a fact of the store,
    not of the string): every rule the server enforces on the strings is in the schema.
    schemathesis.toml has to let createComment answer 422 for that one case; this check
    holds every other 422 to the schema."""
    if response.status_code != 422 or case.method.upper() != "POST" or case.path != _COMMENTS:
        return None
    body_schema, header_schema = _comment_validators()
    key = next((v for k, v in (case.headers or {}).items() if k.lower() == "idempotency-key"), None)
    if not isinstance(case.body, dict) or not body_schema.is_valid(case.body):
        return None
    if key is not None and not header_schema.is_valid(key):
        return None
    items = json.loads(response.text)["detail"]
    stated = [
        item
        for item in items
        if item.get("loc") != ["body", "parent_id"] or "no such comment" not in item.get("msg", "")
    ]
    assert not stated, f"a schema-valid comment was refused for a rule the document omits: {items}"
    return None


@schemathesis.hook
def map_query(ctx: Any, query: dict[str, Any] | None) -> dict[str, Any] | None:
    """`from` later than `to` is a 422 (docs/api.md §7), a rule between two parameters that
    no OpenAPI schema can state: a schema-valid pair is put in order, so the acceptance check
    still holds every other combination to a 2xx. The 422 itself is in the hostile table."""
    if not query or not isinstance(query.get("from"), str) or not isinstance(query.get("to"), str):
        return query
    from app.timestamps import date_bound_us

    try:
        first = date_bound_us(query["from"], end=False)
        last = date_bound_us(query["to"], end=True)
    except ValueError:
        return query  # not a valid bound: the request is meant to be refused anyway
    if first > last:
        query["from"], query["to"] = query["to"], query["from"]
    return query


_DECISION = _COMMENTS + "/{comment_id}/decision"
# The messages of the rules between a decision's fields (app/comments/wire.py `Decision`)
# and between a decision and its comment or notice (app/comments/moderation_sql.py).
_DECISION_RULES = (
    "needs a `reason`",
    "takes no `reason`",
    "go together",
    "needs `grounds`",
    "a notice is settled by",
    "needs `reject` with `illegal_content`",
    "only a visible comment can be",
    "is not a notice of this comment",
    "decided already",
)


@functools.cache
def _decision_validator() -> Any:
    import jsonschema

    from app.openapi import openapi_document
    from app.routes import ROUTES

    schemas = openapi_document(ROUTES)["components"]["schemas"]
    # The schemas refer to each other as #/components/schemas/...: a root shaped like the
    # document resolves them.
    root = {"$ref": "#/components/schemas/Decision", "components": {"schemas": schemas}}
    return jsonschema.Draft202012Validator(root)


@schemathesis.check
def decision_rules_stated(ctx: Any, response: Any, case: Any) -> bool | None:
    """A schema-valid decision is refused with a 422 only for a rule between its fields or
    between it and its comment: every rule on a single field is in the schema."""
    if response.status_code != 422 or case.method.upper() != "POST" or case.path != _DECISION:
        return None
    if not isinstance(case.body, dict) or not _decision_validator().is_valid(case.body):
        return None
    items = json.loads(response.text)["detail"]
    stated = [
        item
        for item in items
        if item.get("loc") != ["body"]
        or not any(rule in item.get("msg", "") for rule in _DECISION_RULES)
    ]
    assert not stated, f"a schema-valid decision was refused for a rule the document omits: {items}"
    return None
