"""The OpenAPI 3.1 document served at /openapi.json, written from the route table
(app/routes.py) and the wire models (app/models/): nothing here restates a shape.

Component schemas come from Pydantic in serialisation mode for responses and validation
mode for request bodies; query and header parameters are the fields of the operation's
parameter model. Every GET is also documented as HEAD: the same statuses and headers,
no body.
"""

from __future__ import annotations

import copy
import re
from collections.abc import Sequence
from typing import Any

from pydantic import BaseModel
from pydantic.json_schema import models_json_schema

from app import models as m
from app import versions
from app.comments import comment_wire as cw
from app.comments.auth import CHALLENGE_DETAILS
from app.declarations import Operation, Route

_JSON = "application/json"
_SCHEMAS = "#/components/schemas/"

# Responses are described with these; request bodies with their validation-mode schemas.
RESPONSE_MODELS: tuple[type[BaseModel], ...] = (
    m.Article,
    m.ArticleSummary,
    m.ArticleList,
    m.SearchFacets,
    m.SearchResults,
    m.CorrectionList,
    m.ChangeList,
    m.RetractedArticle,
    cw.Comment,
    cw.CommentList,
    cw.CommentCount,
    cw.CommentCounts,
    m.Error,
    m.ValidationError,
    m.Health,
    m.Ready,
    m.OpenAPIDocument,
)
REQUEST_MODELS: tuple[type[BaseModel], ...] = (cw.CommentCreate, cw.CommentCountsRequest)

TAGS = [
    {"name": "articles", "description": "Published articles, categories and search."},
    {"name": "feeds", "description": "Atom, RSS and JSON feeds of the newest articles."},
    {"name": "sitemaps", "description": "Sitemaps for crawlers: per language, and news."},
    {"name": "comments", "description": "Readers' comments on articles; never cached."},
    {
        "name": "moderation",
        "description": "Reader reports, notices of illegal content, and the moderators' queues,"
        " decisions, log and figures (docs/moderation.md); never cached.",
    },
    {"name": "operations", "description": "Liveness, readiness and this document."},
]

PATH_PARAMETERS: dict[str, dict[str, Any]] = {
    "language": {
        "description": "One of the nine language codes; anything else is a 400.",
        "schema": {"$ref": _SCHEMAS + "Language"},
        "example": "en",
    },
    "article_id": {
        "description": "Article id, percent-encoded in the path (`%20`, UTF-8 such as"
        " `%EA%B2%BD`).",
        "schema": {"type": "string", "minLength": 1, "maxLength": m.ID_MAX},
        "example": "en-0001",
    },
    "sitemap": {
        "description": "`news`, a language code (page 1 of its sitemap), or a language code"
        " and a page number from 2 (`en-2`), as the sitemap index lists them.",
        "schema": {"type": "string", "pattern": "^[a-z_]+(-[1-9][0-9]*)?$"},
        "example": "en",
    },
    "notice_id": {
        "description": "Notice id, from the notice's receipt.",
        "schema": {"type": "string", "minLength": 1},
        "example": "01JD5Z3N8Q6V2K4M7R9T0W1X2Y",
    },
    "comment_id": {
        "description": "Comment id, as returned when the comment was created.",
        "schema": {"type": "string", "minLength": 1},
        "example": "01JD5Z3N8Q6V2K4M7R9T0W1X2Y",
    },
}


def _optional_header(name: str, description: str, example: str) -> dict[str, Any]:
    """A request header parameter: optional, a string."""
    return {
        "name": name,
        "in": "header",
        "required": False,
        "description": description,
        "schema": {"type": "string"},
        "example": example,
    }


IF_NONE_MATCH = _optional_header(
    "If-None-Match",
    "An ETag from an earlier answer: when it still matches, the answer is"
    " 304 with no body. Each content coding has its own tag (the identity tag with `-gzip`,"
    " `-br` or `-zstd` before the closing quote); the tag of the coding chosen for this"
    " request is the one compared.",
    '"3f2a9c-1a2b3c4d"',
)

IF_MODIFIED_SINCE = _optional_header(
    "If-Modified-Since",
    "An HTTP-date: when the answer's Last-Modified is not after it, and the"
    " request has no If-None-Match, the answer is 304 with no body (RFC 9110, 13.1.3). A"
    " date that does not parse is ignored.",
    "Fri, 20 Nov 2026 08:30:00 GMT",
)

ACCEPT_ENCODING = _optional_header(
    "Accept-Encoding",
    "Content codings the client reads (RFC 9110, 12.5.3): `gzip`, `br`, `zstd`"
    " with q-values, `*` and `identity;q=0`. Every answer comes in all three; a page asked"
    " for again (lists, latest, search, sitemap pages) is compressed whole, under a tag of"
    " its own. Without the header the body is identity;"
    " 406 only when identity is refused and no offered coding is acceptable.",
    "gzip, br",
)

_STRING = {"schema": {"type": "string"}}
RESPONSE_HEADERS: dict[str, dict[str, Any]] = {
    "ETag": {"description": "Entity tag for If-None-Match.", **_STRING},
    "Last-Modified": {
        "description": "HTTP-date of the newest `updated_at` among the answer's articles"
        " (absent on an empty page), for If-Modified-Since.",
        **_STRING,
    },
    "Cache-Control": {
        "description": "`public, max-age=N, stale-while-revalidate=S, stale-if-error=E`"
        " (NEWS_CACHE_MAX_AGE, NEWS_CACHE_STALE_WHILE_REVALIDATE, NEWS_CACHE_STALE_IF_ERROR).",
        **_STRING,
    },
    "Vary": {"description": "Always `Accept-Encoding`.", **_STRING},
    "Content-Encoding": {
        "description": "`gzip`, `br` or `zstd` when the body is compressed; absent for identity.",
        **_STRING,
    },
    "Surrogate-Key": {
        "description": "Space-separated keys naming what the answer depends on, for a CDN to"
        " purge: `lang-<language>`, `list-<language>` (collections, feeds, sitemap pages),"
        " `cat-<hash>` (a category's pages and feeds), `art-<hash>` (one article), `site`"
        " (the sitemap index and the news sitemap). docs/delivery.md has the grammar.",
        **_STRING,
    },
    "No-Store": {"description": "Always `no-store`.", **_STRING},
    "Location": {"description": "Path of the created comment.", **_STRING},
    "Idempotent-Replayed": {
        "description": "`true` when an Idempotency-Key matched an earlier create.",
        **_STRING,
    },
    "Retry-After": {"description": "Seconds to wait.", "schema": {"type": "integer"}},
    "WWW-Authenticate": {"description": '`Bearer realm="comments"`.', **_STRING},
    "Link": {
        "description": 'RFC 8288 pages: `rel="first"` and `rel="last"` always, `rel="prev"` and'
        ' `rel="next"` where that page exists (past the last page, `prev` is the last page);'
        " relative URLs keeping the operation's other query parameters (unknown ones are"
        " left out). Not sent when it would exceed 6,144 characters.",
        **_STRING,
        "example": '</api/v1/en/articles?page_size=5&page=1>; rel="first", '
        '</api/v1/en/articles?page_size=5&page=3>; rel="next", '
        '</api/v1/en/articles?page_size=5&page=9>; rel="last"',
    },
}

# What a client sees for each error status, shown as the example of its response.
ERROR_EXAMPLES: dict[int, Any] = {
    400: {"detail": "Unsupported language: xx"},
    401: {"detail": "Invalid or missing moderator token"},
    403: {"detail": "Not a moderator of this language"},
    404: {"detail": "Article not found"},
    406: {
        "detail": "Not Acceptable: no content coding in Accept-Encoding is available "
        "(identity, gzip, br, zstd)"
    },
    409: {"detail": "Idempotency-Key was used for a different comment"},
    410: {"detail": "Article retracted"},
    413: {"detail": "Request body is larger than 65536 bytes"},
    414: {"detail": "Request Line is too large (9000 > 8190)"},
    415: {"detail": "Content-Type must be application/json"},
    422: {
        "detail": [
            {
                "type": "greater_than_equal",
                "loc": ["query", "page"],
                "msg": "Input should be greater than or equal to 1",
            }
        ]
    },
    429: {"detail": "Too many comments: at most 10 per 60 seconds; retry in 42 seconds"},
    503: {"detail": "Comment store unavailable"},
}


def component_schemas(routes: Sequence[Route]) -> dict[str, Any]:
    """The listed shapes, and every response and body model an operation of `routes` names
    (so a new operation cannot leave its shapes out)."""
    responses = dict.fromkeys(RESPONSE_MODELS)
    requests = dict.fromkeys(REQUEST_MODELS)
    for route in routes:
        for op in route.operations:
            if isinstance(op.response, type) and issubclass(op.response, BaseModel):
                responses[op.response] = None
            if op.body is not None:
                requests[op.body] = None
    _, top = models_json_schema(
        [(model, "serialization") for model in responses]
        + [(model, "validation") for model in requests],
        ref_template=_SCHEMAS + "{model}",
    )
    return dict(sorted(top["$defs"].items()))


def _model_parameters(
    model: type[BaseModel], where: str, components: dict[str, Any]
) -> list[dict[str, Any]]:
    """One parameter per field of a query or header model; the types it names (an enum)
    join `components`."""
    schema = model.model_json_schema(ref_template=_SCHEMAS + "{model}")
    components.update(schema.get("$defs", {}))
    required = set(schema.get("required", ()))
    parameters = []
    for name, field_schema in schema["properties"].items():
        field_schema = dict(field_schema)
        field_schema.pop("title", None)
        description = field_schema.pop("description")
        if "anyOf" in field_schema:  # `X | None` with None as "absent": just X
            kept = [s for s in field_schema.pop("anyOf") if s != {"type": "null"}]
            inner = kept[0] if len(kept) == 1 else {"anyOf": kept}
            field_schema = {**inner, **field_schema}
            if field_schema.get("default", ...) is None:
                del field_schema["default"]
        if where == "header":
            name = "-".join(word.capitalize() for word in name.split("-"))
        parameter = {
            "name": name,
            "in": where,
            "required": name in required,
            "description": description,
            "schema": field_schema,
            "example": field_schema["examples"][0],
        }
        if field_schema.get("type") == "array":
            parameter |= {"style": "form", "explode": True}
        parameters.append(parameter)
    return parameters


def _content(schema: Any, media_type: str = _JSON) -> dict[str, Any]:
    if isinstance(schema, type) and issubclass(schema, BaseModel):
        schema = {"$ref": _SCHEMAS + schema.__name__}
    return {media_type: {"schema": schema}}


def _responses(route: Route, op: Operation) -> dict[str, Any]:
    cacheable = route.cache == "public"
    success: dict[str, Any] = {"description": op.texts.returns}
    if op.response is not None:
        success["content"] = _content(op.response, op.media_type)
    headers = [*op.response_headers]
    if cacheable:
        headers += ["ETag", "Cache-Control", "Vary", "Content-Encoding", "Surrogate-Key"]
    if headers:
        success["headers"] = {name: RESPONSE_HEADERS[name] for name in headers}
    if op.links:
        success["links"] = op.links
    responses: dict[str, Any] = {str(op.status): success}
    if cacheable:
        validators: tuple[str, ...] = ("ETag", "Vary")
        if "Last-Modified" in op.response_headers:
            validators += ("Last-Modified",)
        responses["304"] = {
            "description": "Not modified: If-None-Match matched"
            + (" (or If-Modified-Since)." if "Last-Modified" in validators else "."),
            "headers": {name: RESPONSE_HEADERS[name] for name in validators},
        }
    for status, description in sorted(op.errors.items()):
        model: type[BaseModel] = m.ValidationError if status == 422 else m.Error
        example = ERROR_EXAMPLES[status]
        if status == 401 and op.auth is not None:
            example = {"detail": CHALLENGE_DETAILS[op.auth]}
        if status in op.error_details:
            example = {"detail": op.error_details[status]}
        notice = status == 410 and op.gone == "notice"
        expired = status == 410 and op.gone == "cursor"
        if notice:
            model = m.RetractedArticle
            example = m.RETRACTED_EXAMPLE
        elif expired:
            example = {"detail": "Cursor expired"}
        content = _content(model)
        content[_JSON]["example"] = example
        response: dict[str, Any] = {"description": description, "content": content}
        if notice:
            response["headers"] = {
                name: RESPONSE_HEADERS[name]
                for name in ("ETag", "Cache-Control", "Vary", "Content-Encoding", "Surrogate-Key")
            }
        if expired:
            response["headers"] = {"Cache-Control": RESPONSE_HEADERS["No-Store"]}
        if status == 429:
            response["headers"] = {"Retry-After": RESPONSE_HEADERS["Retry-After"]}
        if status == 401:
            response["headers"] = {"WWW-Authenticate": RESPONSE_HEADERS["WWW-Authenticate"]}
        responses[str(status)] = response
    if route.cache == "no-store":
        for response in responses.values():
            response.setdefault("headers", {})["Cache-Control"] = RESPONSE_HEADERS["No-Store"]
    return responses


def _operation(route: Route, op: Operation, components: dict[str, Any]) -> dict[str, Any]:
    parameters = [
        {"name": name, "in": "path", "required": True, **PATH_PARAMETERS[name]}
        for name in _path_names(route.path)
    ]
    if op.query is not None:
        parameters += _model_parameters(op.query, "query", components)
    if op.headers is not None:
        parameters += _model_parameters(op.headers, "header", components)
    if route.cache == "public":
        parameters += [IF_NONE_MATCH, ACCEPT_ENCODING]
    if "Last-Modified" in op.response_headers:
        parameters.append(IF_MODIFIED_SINCE)
    document: dict[str, Any] = {
        "operationId": op.operation_id,
        "summary": op.texts.summary,
        "description": op.texts.description,
        "tags": [route.tag],
        "security": _security(op),
        "parameters": parameters,
    }
    if op.body is not None:
        document["requestBody"] = {"required": True, "content": _content(op.body)}
    document["responses"] = _responses(route, op)
    return document


# Bearer tokens by who holds them (docs/moderation.md); an operation lists the ones it reads.
SECURITY_SCHEMES = {
    "ModeratorBearer": "A moderator's token (NEWS_MODERATORS), or NEWS_ADMIN_TOKEN.",
    "AuthorBearer": "The `author_token` a create answered with.",
    "NoticeBearer": "The `access_token` of a notice's receipt.",
}


def _security(op: Operation) -> list[dict[str, list[str]]]:
    schemes: dict[str, list[dict[str, list[str]]]] = {
        "moderator": [{"ModeratorBearer": []}],
        "author": [{"AuthorBearer": []}],
        # An optional token is left out of `security` (clients generated from it would
        # then demand one): the operation's description says what the token changes.
        "author?": [],
        "notice": [{"NoticeBearer": []}],
        "moderator|author": [{"ModeratorBearer": []}, {"AuthorBearer": []}],
    }
    return [] if op.auth is None else schemes[op.auth]


def _head(get: dict[str, Any]) -> dict[str, Any]:
    """The GET's twin without bodies: a HEAD answer never has one, errors included."""
    head = copy.deepcopy(get)
    head["operationId"] = get["operationId"] + "Head"
    head["summary"] = get["summary"] + " (headers only)"
    head["description"] = "As GET, with the same status and headers and no body."
    for response in head["responses"].values():
        response.pop("content", None)
        response.pop("links", None)
    return head


def _path_names(path: str) -> list[str]:
    return re.findall(r"\{(\w+)\}", path)


def openapi_document(routes: Sequence[Route]) -> dict[str, Any]:
    """The document of the route table `routes` (app.routes.ROUTES)."""
    schemas = component_schemas(routes)
    paths: dict[str, Any] = {}
    for route in routes:
        if not route.documented:
            continue
        item: dict[str, Any] = {}
        for op in route.operations:
            item[op.method] = _operation(route, op, schemas)
            if op.method == "get":
                item["head"] = _head(item["get"])
        paths[route.path] = item
    return {
        "openapi": "3.1.0",
        "info": {
            "title": "News article delivery service",
            "version": versions.API_VERSION,
            "summary": "Read-only news articles in nine languages, with comments.",
            "description": "Articles are published by an offline build and served read-only;"
            " comments are the only writes. Every error is a JSON object with `detail`:"
            " a string, or for 422 a list of `{type, loc, msg}` items."
            " The human-readable contract is docs/api.md in the repository.",
            "license": {"name": "Proprietary", "identifier": "LicenseRef-Proprietary"},
        },
        "servers": [{"url": "/", "description": "The service that serves this document."}],
        "tags": TAGS,
        "paths": paths,
        "components": {
            "schemas": dict(sorted(schemas.items())),
            "securitySchemes": {
                name: {"type": "http", "scheme": "bearer", "description": text}
                for name, text in SECURITY_SCHEMES.items()
            },
        },
    }
