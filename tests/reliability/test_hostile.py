# ruff: noqa: E501 - the case tables keep one case per line, however long
"""Hostile input: one line per case, each answered by the error docs/api.md names or a correct
empty result; never a 5xx, never a dead worker, never a stack trace.

`CASES` run through falcon.testing (the app alone); those marked `wire` also go to a real
gunicorn as raw bytes, next to `WIRE_ONLY` cases that only exist on the wire (malformed
request lines and headers, which gunicorn itself answers: app/gunicorn_worker.py makes
those answers JSON too). A new case is one more line.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import quote

import falcon.testing
import orjson
import pytest

from app.config import Settings
from app.wsgi import create_app
from tests.reliability.harness import ADMIN_TOKEN, Reply, Server, parse_response

LEAK_MARKERS = ("Traceback", 'File "', "/work/", "site-packages", ".py:", "Exception")
JSON = {"Content-Type": "application/json"}
ARTICLE = "{A}"  # replaced by a real English article id (percent-encoded)
C = "/api/v1/en/articles/{A}/comments"  # the comment collection of that article

Check = Callable[[Reply], None]


def empty_list(reply: Reply) -> None:
    body = reply.json()
    assert (body["items"], body["total"], body["total_pages"]) == ([], 0, 0), body


LIST_KEYS = {"items", "total", "page", "page_size", "total_pages"}


def a_list(reply: Reply) -> None:
    body = reply.json()
    assert set(body) == LIST_KEYS, body
    assert len(body["items"]) <= body["page_size"]


def search_results(reply: Reply) -> None:
    """A list page plus the category facets every search answer carries, and highlights
    aligned with the items when asked for (api.md §7)."""
    body = reply.json()
    assert set(body) - {"highlights"} == LIST_KEYS | {"facets"}, body
    assert isinstance(body["facets"]["category"], dict)
    assert sum(body["facets"]["category"].values()) == body["total"], body
    if "highlights" in body:
        assert [h["id"] for h in body["highlights"]] == [a["id"] for a in body["items"]]
    assert len(body["items"]) <= body["page_size"]


def detail(text: str) -> Check:
    def check(reply: Reply) -> None:
        assert reply.json()["detail"] == text

    return check


def loc(*where: str) -> Check:
    def check(reply: Reply) -> None:
        assert tuple(reply.json()["detail"][0]["loc"][: len(where)]) == where, reply.json()

    return check


def page_is(page: int | str, items: int) -> Check:
    """`page` as digits when long: int() and json refuse over 4,300 of them by default."""

    def check(reply: Reply) -> None:
        digits = str(page)
        if len(digits) < 4000:
            body = reply.json()
            assert body["page"] == int(digits) and len(body["items"]) == items, body
            return
        echoed = re.search(rb'"page":([0-9]+),', reply.body)
        assert echoed is not None and echoed.group(1) == digits.encode(), reply.body[:300]
        assert items == 0 and reply.body.startswith(b'{"items":[]'), reply.body[:300]

    return check


def stored(content: str) -> Check:
    """201 and the hostile text came back exactly as sent (stored as data, not run)."""

    def check(reply: Reply) -> None:
        assert reply.json()["content"] == content

    return check


def coded(encoding: str | None, then: Check | None = None) -> Check:
    """Sent in `encoding` (None: identity), with Vary; the decoded body passes `then`."""

    def check(reply: Reply) -> None:
        assert reply.headers.get("content-encoding") == encoding, reply.headers
        assert reply.headers.get("vary") == "Accept-Encoding", reply.headers
        if then is not None:
            then(reply)

    return check


def not_acceptable(reply: Reply) -> None:
    assert reply.json()["detail"].startswith("Not Acceptable"), reply.json()
    assert "content-encoding" not in reply.headers


def too_long(reply: Reply) -> None:
    """gunicorn's and the app's own 414 (app/middleware.py): the same bound, the same words."""
    assert reply.json()["detail"].startswith("URI Too Long: "), reply.json()


def counts_null(reply: Reply) -> None:
    assert all(v is None for v in reply.json()["counts"].values()), reply.json()


@dataclass(frozen=True)
class Case:
    name: str
    method: str
    target: str
    expect: tuple[int, ...]
    check: Check | None = None
    headers: dict[str, str] = field(default_factory=dict)
    body: bytes = b""
    wire: bool = False  # also sent to the real gunicorn
    wire_expect: tuple[int, ...] | None = None  # when gunicorn answers before the app


SQL = "' OR '1'='1'; DROP TABLE comments;--"
SHELL = "$(rm -rf /); `id` | cat /etc/passwd && echo ${PATH} > /tmp/x"
Q = quote  # percent-encode for a query value
SYNTAX_200 = ('"-OR a -"b OR" OR -' * 12)[:200]  # operators and quotes, unbalanced: 16 phrases
SYNTAX_8 = '"-OR a -"b OR" OR -' * 5  # the same at the limit of 8 phrases (docs/api.md §7)
UNBALANCED = '"first paragraph'
EXCLUSIONS = '-経済 -"日本"'
PHRASE_50 = '"' + " ".join(["of"] * 50) + '"'  # a 50-word phrase of a common word
AE = "Accept-Encoding"
AE_10K = ", ".join(f"x-coding-{i};q=0.5" for i in range(600)) + ", zstd"  # ~12 KB
BIG_QUERY = "x=" + "a" * 65536  # 64 KiB of query string
MANY_PARAMS = "&".join(f"p{i}=1" for i in range(5000))
WIRE_MANY_PARAMS = "&".join(f"p{i}=1" for i in range(1000))  # under gunicorn's 8190 bytes
DEEP = b"[" * 30_000 + b"]" * 30_000  # 60 KB: under the 64 KiB limit
DEEP_OBJECT = b'{"author":"a","content":' + b'{"x":' * 5000 + b"1" + b"}" * 5000 + b"}"
OVERSIZE = b'{"author":"a","content":"' + b"x" * (64 * 1024) + b'"}'
WIDE_OK = orjson.dumps({"author": "a", "content": "fine", "junk": "y" * 60_000})
MANY_KEYS = orjson.dumps({"author": "a", "content": "ok", **{f"k{i}": i for i in range(4000)}})
COMMENT = orjson.dumps({"author": "mallory", "content": SQL})
# Another text for a second create that must succeed: the same one again from the same
# client within ten minutes is a duplicate (409, docs/moderation.md rule 2).
COMMENT_AGAIN = orjson.dumps({"author": "mallory", "content": SQL + " (again)"})


def body(author: object = "a", content: object = "b", **extra: object) -> bytes:
    return orjson.dumps({"author": author, "content": content, **extra})


# fmt: off
CASES: tuple[Case, ...] = (
    # -- SQL and shell metacharacters --------------------------------------------------------
    Case("q-sql", "GET", f"/api/v1/en/articles/search?q={Q(SQL)}", (200,), search_results, wire=True),
    Case("q-shell", "GET", f"/api/v1/en/articles/search?q={Q(SHELL)}", (200,), search_results, wire=True),
    Case("q-only-punct", "GET", "/api/v1/en/articles/search?q=%27%22%3B--", (200,), empty_list),
    # -- search syntax (docs/api.md §7): operators, quotes, exclusions only ------------------------
    Case("q-operators-200", "GET", f"/api/v1/en/articles/search?q={Q(SYNTAX_200)}", (422,), loc("query", "q"), wire=True),
    Case("q-operators-8-phrases", "GET", f"/api/v1/en/articles/search?q={Q(SYNTAX_8)}", (200,), search_results, wire=True),
    Case("q-unbalanced-quote", "GET", f"/api/v1/en/articles/search?q={Q(UNBALANCED)}", (200,), search_results),
    Case("q-or-or", "GET", f"/api/v1/en/articles/search?q={Q('OR OR')}", (200,), empty_list),
    Case("q-or-edges", "GET", f"/api/v1/en/articles/search?q={Q('OR title OR')}", (200,), search_results),
    Case("q-dash-alone", "GET", f"/api/v1/en/articles/search?q={Q('-')}", (200,), empty_list),
    Case("q-double-dash", "GET", f"/api/v1/en/articles/search?q={Q('--x')}", (200,), empty_list),
    Case("q-only-exclusions", "GET", f"/api/v1/ja/articles/search?q={Q(EXCLUSIONS)}", (200,), empty_list),
    Case("q-phrase-50-words", "GET", f"/api/v1/en/articles/search?q={Q(PHRASE_50)}", (200,), search_results, wire=True),
    Case("q-operators-8-highlight", "GET", f"/api/v1/en/articles/search?q={Q(SYNTAX_8)}&highlight=true", (200,), search_results, wire=True),
    Case("q-phrase-50-highlight", "GET", f"/api/v1/en/articles/search?q={Q(PHRASE_50)}&highlight=true&page_size=100", (200,), search_results),
    Case("q-markup-highlight", "GET", f"/api/v1/en/articles/search?q={Q('<mark>central</mark> &amp; <script>')}&highlight=true", (200,), search_results),
    Case("highlight-not-bool", "GET", "/api/v1/en/articles/search?q=a&highlight=maybe", (422,), loc("query", "highlight")),
    Case("category-sql", "GET", f"/api/v1/en/articles?category={Q(SQL)}", (200,), empty_list),
    Case("category-shell", "GET", f"/api/v1/ko/articles?category={Q(SHELL)}", (200,), empty_list),
    Case("id-sql", "GET", f"/api/v1/en/articles/{Q(SQL, safe='')}", (404,), wire=True),
    Case("id-shell", "GET", f"/api/v1/en/articles/{Q(SHELL, safe='')}", (404,)),
    Case("language-sql", "GET", f"/api/v1/{Q(SQL, safe='')}/articles", (400,)),
    Case("comment-id-sql", "GET", f"{C}/{Q(SQL, safe='')}", (404,), detail("Comment not found")),
    Case("comments-of-sql-id", "GET", f"/api/v1/en/articles/{Q(SQL, safe='')}/comments", (404,)),
    Case("counts-sql", "GET", f"/api/v1/en/comments/counts?article_id={Q(SQL)}", (200,), counts_null),
    Case("comment-body-sql", "POST", C, (201,), stored(SQL), JSON, COMMENT, wire=True),
    Case("comment-body-shell", "POST", C, (201,), stored(SHELL), JSON, body(content=SHELL)),
    Case("comment-parent-sql", "POST", C, (422,), loc("body", "parent_id"), JSON, body(parent_id=SQL)),
    Case("delete-sql-token", "DELETE", f"{C}/x", (401,), None, {"Authorization": f"Bearer {SQL}"}),
    # -- path traversal and NUL -------------------------------------------------------------
    Case("traversal-encoded", "GET", "/api/v1/en/articles/..%2F..%2Fetc%2Fpasswd", (404,), wire=True),
    Case("traversal-dots", "GET", "/api/v1/en/articles/%2e%2e%2f%2e%2e%2fetc%2fpasswd", (404,)),
    Case("traversal-plain", "GET", "/api/v1/../../../etc/passwd", (404,), wire=True),
    Case("traversal-language", "GET", "/api/v1/..%2F..%2F/articles", (400, 404)),
    Case("traversal-openapi", "GET", "/openapi.json/..%2F..%2Fapp%2Fconfig.py", (404,)),
    Case("nul-id", "GET", "/api/v1/en/articles/x%00y", (404,), detail("Article not found"), wire=True),
    Case("nul-only-id", "GET", "/api/v1/en/articles/%00", (404,)),
    Case("nul-comment-id", "GET", f"{C}/%00", (404,), detail("Comment not found")),
    Case("nul-q", "GET", "/api/v1/en/articles/search?q=a%00b", (200,), search_results, wire=True),
    Case("nul-category", "GET", "/api/v1/en/articles?category=%00", (200,), empty_list),
    Case("nul-in-body", "POST", C, (422,), loc("body", "content"), JSON, body(content="a\u0000b")),
    # -- invalid UTF-8 (percent-encoded here; raw bytes in WIRE_ONLY) --------------------------
    Case("utf8-bad-id", "GET", "/api/v1/en/articles/%FF%FE", (404,), wire=True),
    Case("utf8-bad-language", "GET", "/api/v1/%C3%28/articles", (400,), wire=True),
    Case("utf8-bad-q", "GET", "/api/v1/en/articles/search?q=%FF%FE", (200,), search_results, wire=True),
    Case("utf8-bad-category", "GET", "/api/v1/en/articles?category=%C3%28", (200,), empty_list),
    Case("utf8-bad-page", "GET", "/api/v1/en/articles?page=%FF", (422,), loc("query", "page")),
    Case("utf8-bad-body", "POST", C, (422,), loc("body"), JSON, b'{"author":"\xff","content":"x"}', wire=True),
    Case("utf8-surrogate-body", "POST", C, (422,), None, JSON, b'{"author":"a","content":"\xed\xa0\x80"}'),
    Case("utf8-escaped-surrogate", "POST", C, (201, 422), None, JSON, b'{"author":"a","content":"\\ud800"}', wire=True),
    # -- sizes and counts -------------------------------------------------------------------
    Case("query-64k", "GET", f"/api/v1/en/articles?{BIG_QUERY}", (414,), too_long, wire=True),
    Case("q-64k", "GET", f"/api/v1/en/articles/search?q={'a' * 65536}", (414,), too_long),
    Case("q-8000-spaces", "GET", f"/api/v1/en/articles/search?q={'+' * 8000}x", (200,), search_results),
    Case("params-5000", "GET", f"/api/v1/en/articles?{MANY_PARAMS}", (414,), too_long),
    Case("params-1000", "GET", f"/api/v1/en/articles?{WIRE_MANY_PARAMS}", (200,), a_list, wire=True),
    Case("page-repeated", "GET", "/api/v1/en/articles?" + "page=1&" * 1000 + "page=2&page_size=5", (200,), page_is(2, 5)),
    Case("counts-101-ids", "GET", "/api/v1/en/comments/counts?" + "&".join(["article_id=a"] * 101), (422,), wire=True),
    Case("counts-5000-ids", "GET", "/api/v1/en/comments/counts?" + "&".join(["article_id=a"] * 5000), (414,), too_long),
    Case("json-deep-array", "POST", C, (422,), loc("body"), JSON, DEEP, wire=True),
    Case("json-deep-object", "POST", C, (422,), None, JSON, DEEP_OBJECT),
    Case("json-over-64k", "POST", C, (413,), detail("Request body is larger than 65536 bytes"), JSON, OVERSIZE, wire=True),
    Case("json-wide-unknown-field", "POST", C, (201,), stored("fine"), JSON, WIDE_OK),
    Case("json-4000-keys", "POST", C, (201,), stored("ok"), JSON, MANY_KEYS),
    Case("json-array-of-numbers", "POST", C, (422,), loc("body"), JSON, orjson.dumps(list(range(8000)))),
    Case("content-5001-chars", "POST", C, (422,), loc("body", "content"), JSON, body(content="x" * 5001)),
    Case("author-81-chars", "POST", C, (422,), loc("body", "author"), JSON, body(author="x" * 81)),
    # -- numbers ----------------------------------------------------------------------------
    Case("page-1e309", "GET", "/api/v1/en/articles?page=1e309", (422,), loc("query", "page"), wire=True),
    Case("page-minus-0", "GET", "/api/v1/en/articles?page=-0", (422,), loc("query", "page")),
    Case("page-size-minus-0", "GET", "/api/v1/en/articles?page_size=-0", (422,), loc("query", "page_size")),
    Case("page-20-digits", "GET", "/api/v1/en/articles?page=99999999999999999999", (200,), page_is("99999999999999999999", 0), wire=True),
    Case("page-5000-digits", "GET", f"/api/v1/en/articles?page={'9' * 5000}", (200,), page_is("9" * 5000, 0)),
    Case("page-10001-digits", "GET", f"/api/v1/en/articles?page={'9' * 10001}", (414,), too_long),
    Case("limit-20-digits", "GET", "/api/v1/en/articles/latest?limit=99999999999999999999", (422,), loc("query", "limit")),
    Case("limit-1e309", "GET", "/api/v1/en/articles/latest?limit=1e309", (422,), loc("query", "limit")),
    Case("page-nan", "GET", "/api/v1/en/articles?page=NaN", (422,)),
    Case("page-inf", "GET", "/api/v1/en/articles?page=Infinity", (422,)),
    Case("page-hex", "GET", "/api/v1/en/articles?page=0x10", (422,)),
    Case("page-underscore", "GET", "/api/v1/en/articles?page=1_0", (422,)),
    Case("page-arabic-digit", "GET", f"/api/v1/en/articles?page={Q('١')}", (422,)),
    Case("page-space", "GET", "/api/v1/en/articles?page=%201", (422,)),
    Case("page-empty", "GET", "/api/v1/en/articles?page=", (422,)),
    Case("comments-page-20-digits", "GET", f"{C}?page=99999999999999999999", (200,), page_is("99999999999999999999", 0)),
    Case("body-1e309", "POST", C, (422,), None, JSON, b'{"author":"a","content":1e309}'),
    Case("body-minus-0", "POST", C, (422,), loc("body", "author"), JSON, b'{"author":-0,"content":"x"}'),
    Case("body-20-digits", "POST", C, (422,), None, JSON, b'{"author":"a","content":"b","parent_id":99999999999999999999}'),
    Case("body-huge-int", "POST", C, (422,), None, JSON, b'{"author":"a","content":' + b"9" * 5000 + b"}"),
    # -- duplicated parameters: the last value wins ---------------------------------------
    Case("dup-page", "GET", "/api/v1/en/articles?page=1&page=2&page_size=5", (200,), page_is(2, 5), wire=True),
    Case("dup-q-last-empty", "GET", "/api/v1/en/articles/search?q=a&q=", (422,), loc("query", "q")),
    Case("dup-category", "GET", "/api/v1/en/articles?category=x&category=nope", (200,), empty_list),
    Case("dup-order", "GET", f"{C}?order=oldest&order=sideways", (422,), loc("query", "order")),
    # -- content types ----------------------------------------------------------------------
    Case("ct-missing", "POST", C, (415,), None, {}, COMMENT, wire=True),
    Case("ct-text", "POST", C, (415,), None, {"Content-Type": "text/plain"}, COMMENT),
    Case("ct-form", "POST", C, (415,), None, {"Content-Type": "application/x-www-form-urlencoded"}, b"author=a&content=b"),
    Case("ct-multipart", "POST", C, (415,), None, {"Content-Type": "multipart/form-data; boundary=x"}, b"--x--"),
    Case("ct-json-latin1", "POST", C, (415,), None, {"Content-Type": "application/json; charset=latin-1"}, COMMENT),
    Case("ct-json-suffix", "POST", C, (415,), None, {"Content-Type": "application/json-patch+json"}, COMMENT),
    Case("ct-garbage", "POST", C, (415,), None, {"Content-Type": ";;;=\"\\"}, COMMENT),
    Case("ct-upper", "POST", C, (201,), None, {"Content-Type": "APPLICATION/JSON"}, COMMENT_AGAIN),
    Case("ct-json-empty-body", "POST", C, (422,), loc("body"), JSON, b"", wire=True),
    Case("ct-json-not-json", "POST", C, (422,), loc("body"), JSON, b"author=a"),
    Case("ct-on-get", "GET", "/api/v1/en/articles", (200,), a_list, {"Content-Type": "text/html"}, b"<x>"),
    # -- headers with CR/LF (the wire versions are in WIRE_ONLY) ------------------------------
    Case("crlf-idempotency-key", "POST", C, (422,), loc("header"), {**JSON, "Idempotency-Key": "k\r\nX-Evil: 1"}, COMMENT),
    Case("crlf-authorization", "DELETE", f"{C}/x", (401,), None, {"Authorization": f"Bearer {ADMIN_TOKEN}\r\nX: y"}),
    Case("crlf-if-none-match", "GET", "/api/v1/en/categories", (200,), None, {"If-None-Match": '"x"\r\nX: y'}),
    # -- Accept-Encoding (RFC 9110, 12.5.3): a correct choice or 406, never a 5xx ------------
    Case("ae-browser", "GET", "/api/v1/en/articles", (200,), coded("zstd", a_list), {AE: "gzip, deflate, br, zstd"}, wire=True),
    Case("ae-q-values", "GET", "/api/v1/en/articles", (200,), coded("gzip", a_list), {AE: "zstd;q=0.5, gzip;q=0.9"}, wire=True),
    Case("ae-q-three-decimals", "GET", "/api/v1/en/articles", (200,), coded("gzip"), {AE: "zstd;q=0.001, gzip;q=0.002"}),
    Case("ae-star", "GET", "/api/v1/en/articles/search?q=the", (200,), coded("zstd", search_results), {AE: "*"}),
    Case("ae-star-q0-identity", "GET", "/api/v1/en/articles", (200,), coded(None, a_list), {AE: "*;q=0, identity"}),
    Case("ae-identity-q0-gzip", "GET", "/api/v1/en/articles", (200,), coded("gzip", a_list), {AE: "gzip, identity;q=0"}, wire=True),
    Case("ae-identity-q0-unknown", "GET", "/api/v1/en/articles", (406,), not_acceptable, {AE: "compress, identity;q=0"}, wire=True),
    Case("ae-star-q0", "GET", "/api/v1/en/articles/latest", (406,), not_acceptable, {AE: "*;q=0"}),
    Case("ae-br-list-no-identity", "GET", "/api/v1/en/articles", (200,), coded("br", a_list), {AE: "br, identity;q=0"}),
    Case("ae-br-list", "GET", "/api/v1/en/articles", (200,), coded("br", a_list), {AE: "br"}, wire=True),
    Case("ae-br-article", "GET", f"/api/v1/en/articles/{ARTICLE}", (200,), coded("br"), {AE: "br"}, wire=True),
    Case("ae-br-categories", "GET", "/api/v1/en/categories", (200,), None, {AE: "br;q=1, identity;q=0"}),
    Case("ae-unknown", "GET", "/api/v1/en/articles", (200,), coded(None, a_list), {AE: "foo, bar;q=1, compress"}),
    Case("ae-all-q0", "GET", "/api/v1/en/articles", (200,), coded(None, a_list), {AE: "gzip;q=0, zstd;q=0, br;q=0"}),
    Case("ae-case-whitespace", "GET", "/api/v1/en/articles", (200,), coded("gzip", a_list), {AE: " \tGZip ;  Q=1 ,ZSTD;q=0.1 "}),
    Case("ae-x-gzip", "GET", "/api/v1/en/articles/latest", (200,), coded("gzip"), {AE: "x-gzip"}),
    Case("ae-bad-q", "GET", "/api/v1/en/articles", (200,), coded(None, a_list), {AE: "gzip;q=2, zstd;q=abc, br;q=-1, zstd;q=0.0001"}),
    Case("ae-empty", "GET", "/api/v1/en/articles", (200,), coded(None, a_list), {AE: ""}),
    Case("ae-param-without-value", "GET", "/api/v1/en/articles", (200,), coded(None, a_list), {AE: "*;q<2w3E"}),
    Case("ae-punctuation", "GET", "/api/v1/en/articles", (200,), coded(None, a_list), {AE: ",,;;=;q=;,\"\","}),
    Case("ae-10k", "GET", "/api/v1/en/articles", (200,), coded("zstd", a_list), {AE: AE_10K}, wire=True, wire_expect=(400, 431)),
    Case("ae-error-page", "GET", "/api/v1/xx/articles", (400,), None, {AE: "gzip, identity;q=0"}),
    Case("ae-head", "HEAD", "/api/v1/en/articles", (200,), coded("zstd"), {AE: "zstd"}),
    # -- methods ----------------------------------------------------------------------------
    Case("method-unknown", "FOO", "/api/v1/en/articles", (400, 405)),
    Case("method-trace", "TRACE", "/health", (405,), wire=True),
    Case("method-delete-article", "DELETE", "/api/v1/en/articles/x", (405,)),
    Case("method-put-comments", "PUT", C, (405,), None, JSON, COMMENT, wire=True),
)

# Requests only a raw socket can send. `{P}` is a comment-collection path.
WIRE_ONLY: tuple[tuple[str, bytes, tuple[int, ...]], ...] = (
    ("raw-utf8-path", b"GET /api/v1/en/articles/\xff\xfe HTTP/1.1\r\nHost: x\r\n\r\n", (400, 404)),
    ("raw-utf8-query", b"GET /api/v1/en/articles/search?q=\xff\xfe HTTP/1.1\r\nHost: x\r\n\r\n", (200, 400)),
    ("raw-utf8-header", b"GET /health HTTP/1.1\r\nHost: x\r\nX-A: \xff\xfe\r\n\r\n", (200, 400)),
    ("header-bare-cr", b"GET /health HTTP/1.1\r\nHost: x\r\nX-A: a\rb\r\n\r\n", (400,)),
    ("header-bare-lf-injection", b"GET /health HTTP/1.1\r\nHost: x\r\nX-A: a\nX-B: b\r\n\r\n", (200, 400)),
    ("header-nul", b"GET /health HTTP/1.1\r\nHost: x\r\nX-A: a\x00b\r\n\r\n", (400,)),
    ("header-space-before-colon", b"GET /health HTTP/1.1\r\nHost: x\r\nX-A : a\r\n\r\n", (400,)),
    ("header-obs-fold", b"GET /health HTTP/1.1\r\nHost: x\r\nX-A: a\r\n b\r\n\r\n", (400,)),
    ("header-9k", b"GET /health HTTP/1.1\r\nHost: x\r\nX-A: " + b"a" * 9000 + b"\r\n\r\n", (400, 431)),
    ("headers-150", b"GET /health HTTP/1.1\r\nHost: x\r\n" + b"X-A: a\r\n" * 150 + b"\r\n", (400, 431)),
    ("request-line-too-long", b"GET /health?" + b"a" * 9000 + b" HTTP/1.1\r\nHost: x\r\n\r\n", (414,)),
    ("request-line-garbage", b"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03\r\n\r\n", (400,)),
    ("request-line-nul", b"GET /he\x00alth HTTP/1.1\r\nHost: x\r\n\r\n", (400, 404)),
    ("request-line-spaces", b"GET /health  HTTP/1.1\r\nHost: x\r\n\r\n", (400,)),
    ("http-version-9", b"GET /health HTTP/9.9\r\nHost: x\r\n\r\n", (400, 505)),
    ("method-lowercase", b"get /health HTTP/1.1\r\nHost: x\r\n\r\n", (400, 405)),
    ("cl-and-te", b"POST {P} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 4\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n", (400, 422)),
    ("cl-twice", b"POST {P} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 2\r\nContent-Length: 3\r\n\r\n{}x", (400,)),
    ("cl-negative", b"POST {P} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: -1\r\n\r\n", (400,)),
    ("cl-not-a-number", b"POST {P} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 1e3\r\n\r\n", (400,)),
    ("te-unknown", b"POST {P} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nTransfer-Encoding: gzip\r\n\r\n", (400, 501)),
    ("chunk-size-garbage", b"POST {P} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n{}\r\n0\r\n\r\n", (400,)),
    ("chunked-cut-short", b"POST {P} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n10\r\n{\"a\"", (400,)),
    ("chunk-no-terminator", b"POST {P} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n2\r\n{}XX0\r\n\r\n", (400,)),
    ("chunked-over-64k", b"POST {P} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n" + b"%x\r\n" % 70000 + b"[" * 70000 + b"\r\n0\r\n\r\n", (413,)),
    ("cl-short-body", b"POST {P} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 500\r\n\r\n{\"author\"", (400, 422)),
    ("host-missing-http11", b"GET /health HTTP/1.1\r\n\r\n", (200, 400)),
    ("http10-no-host", b"GET /api/v1/en/categories HTTP/1.0\r\n\r\n", (200,)),
)
# fmt: on


def assert_contract(reply: Reply, method: str, name: str) -> None:
    assert 100 <= reply.status < 500, f"{name}: {reply.status} {reply.body[:300]!r}"
    assert reply.headers.get("x-content-type-options") == "nosniff", f"{name}: {reply.headers}"
    text = reply.decoded().decode("utf-8", "replace")
    for marker in LEAK_MARKERS:
        assert marker not in text, f"{name}: body leaks {marker!r}: {text[:300]}"
    if method == "HEAD" or reply.status in (204, 304):
        return
    assert reply.headers.get("content-type", "").startswith("application/json"), name
    parsed = reply.json()  # the stdlib parser: `page` may be an integer of any size
    if reply.status >= 400:
        assert isinstance(parsed, dict) and "detail" in parsed, f"{name}: {text[:300]}"


def _resolve(target: str, article_id: str) -> str:
    return target.replace(ARTICLE, quote(article_id, safe=""))


# -- through falcon.testing -----------------------------------------------------------------


@pytest.fixture(scope="module")
def client(
    sample_bundle: Path, tmp_path_factory: pytest.TempPathFactory
) -> falcon.testing.TestClient:
    tmp = tmp_path_factory.mktemp("hostile")
    settings = Settings(
        bundle_dir=sample_bundle,
        comments_dsn=f"sqlite:///{tmp / 'c.sqlite3'}",
        admin_token=ADMIN_TOKEN,
        comment_rate_count=1_000_000,
    )
    return falcon.testing.TestClient(create_app(settings))


@pytest.fixture(scope="module")
def article_id(sample_bundle: Path) -> str:
    from tests.reliability.harness import sample_article_ids

    return sample_article_ids(sample_bundle)[0]


# wsgiref's validator (inside falcon.testing) warns about the made-up method; gunicorn doesn't.
@pytest.mark.filterwarnings("ignore::wsgiref.validate.WSGIWarning")
@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_hostile_input_in_process(
    case: Case, client: falcon.testing.TestClient, article_id: str
) -> None:
    path, _, query = _resolve(case.target, article_id).partition("?")
    result = client.simulate_request(
        case.method, path, query_string=query or None, headers=case.headers, body=case.body
    )
    reply = Reply(
        result.status_code, {k.lower(): v for k, v in result.headers.items()}, result.content
    )
    assert reply.status in case.expect, f"{case.name}: {reply.status} {reply.body[:300]!r}"
    assert_contract(reply, case.method, case.name)
    if case.check is not None:
        case.check(reply)


@pytest.mark.parametrize(
    "case", [c for c in CASES if c.name.startswith("q-")], ids=lambda c: c.name
)
def test_search_syntax_answers_quickly(
    case: Case, client: falcon.testing.TestClient, article_id: str
) -> None:
    path, _, query = _resolve(case.target, article_id).partition("?")
    start = time.perf_counter()
    result = client.simulate_get(path, query_string=query)
    assert time.perf_counter() - start < 0.5, case.name
    assert result.status_code in case.expect


# -- against a real gunicorn, as raw bytes ---------------------------------------------------


def _wire_request(case: Case, article_id: str) -> bytes:
    head = [f"{case.method} {_resolve(case.target, article_id)} HTTP/1.1", "Host: 127.0.0.1"]
    head += [f"{k}: {v}" for k, v in case.headers.items()]
    if case.body or case.method in ("POST", "PUT"):
        head.append(f"Content-Length: {len(case.body)}")
    head.append("Connection: close")
    return ("\r\n".join(head) + "\r\n\r\n").encode("latin-1") + case.body


@pytest.fixture(scope="module")
def wire_server(server: Server) -> Iterator[Server]:
    workers = server.worker_pids()
    yield server
    # No case may have killed (or made gunicorn replace) a worker, or logged a traceback.
    assert server.worker_pids() == workers
    log = server.log_text()
    assert "Traceback" not in log and "Error handling request" not in log, log[-3000:]


@pytest.mark.e2e
@pytest.mark.parametrize("case", [c for c in CASES if c.wire], ids=lambda c: c.name)
def test_hostile_input_on_the_wire(case: Case, wire_server: Server, article_id: str) -> None:
    reply = parse_response(wire_server.raw(_wire_request(case, article_id)))
    expect = case.wire_expect or case.expect
    assert reply.status in expect, f"{case.name}: {reply.status} {reply.body[:300]!r}"
    assert_contract(reply, case.method, case.name)
    if case.check is not None and case.wire_expect is None:
        case.check(reply)


@pytest.mark.e2e
@pytest.mark.parametrize(("name", "data", "expect"), WIRE_ONLY, ids=[c[0] for c in WIRE_ONLY])
def test_malformed_request_on_the_wire(
    name: str, data: bytes, expect: tuple[int, ...], wire_server: Server, article_id: str
) -> None:
    path = f"/api/v1/en/articles/{quote(article_id, safe='')}/comments".encode()
    reply = parse_response(wire_server.raw(data.replace(b"{P}", path), shut_write=True))
    assert reply.status in expect, f"{name}: {reply.status} {reply.body[:300]!r}"
    assert_contract(reply, "GET", name)


@pytest.mark.e2e
def test_malformed_requests_on_the_gthread_worker(
    sample_bundle: Path, tmp_path: Path, article_id: str
) -> None:
    """NEWS_WORKER_CLASS=gthread gets the same JSON answers from gunicorn's own handler."""
    path = f"/api/v1/en/articles/{quote(article_id, safe='')}/comments".encode()
    with Server(tmp_path / "srv", sample_bundle, workers=1, worker_class="gthread") as srv:
        assert "JsonErrorThread" in srv.log_text()
        for name, data, expect in WIRE_ONLY:
            reply = parse_response(srv.raw(data.replace(b"{P}", path), shut_write=True))
            assert reply.status in expect, f"{name}: {reply.status} {reply.body[:300]!r}"
            assert_contract(reply, "GET", name)
        workers = srv.worker_pids()
        assert len(workers) == 1
    assert "Traceback" not in srv.log_text()
