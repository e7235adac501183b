"""The comment API through HTTP, on both backends (docs/api.md §1 and §4)."""

from __future__ import annotations

import re
from typing import Any

import pytest

from app.openapi import openapi_document
from app.routes import ROUTES
from tests.comments.support import ADMIN_TOKEN, Client, MakeClient, post
from tests.test_http_links import page_of, parse_link

BASE = "/api/v1/en/articles/a1/comments"
AUTH = {"Authorization": f"Bearer {ADMIN_TOKEN}"}
RFC3339_UTC = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z")


def detail_locs(result: Any) -> list[list[Any]]:
    assert result.status_code == 422, result.text
    return [item["loc"] for item in result.json["detail"]]


# -- create and get -----------------------------------------------------------------


def test_create_returns_comment_with_location(client: Client) -> None:
    result = post(client, {"author": " Ann ", "content": " Hello\nworld\t! "})
    assert result.status_code == 201
    comment = result.json
    public = {
        "id",
        "article_id",
        "language",
        "parent_id",
        "author",
        "content",
        "created_at",
        "featured",
        "edited_at",
    }
    # The 201 alone adds the status and the author's token (docs/api.md §12).
    assert set(comment) == public | {"status", "moderation", "author_token"}
    assert (comment["status"], comment["moderation"], comment["featured"]) == (
        "visible",
        None,
        False,
    )
    assert comment["edited_at"] is None
    assert comment["author"] == "Ann"
    assert comment["content"] == "Hello\nworld\t!"
    assert comment["parent_id"] is None
    assert (comment["article_id"], comment["language"]) == ("a1", "en")
    assert RFC3339_UTC.fullmatch(comment["created_at"])
    assert result.headers["location"] == f"{BASE}/{comment['id']}"
    assert result.headers["cache-control"] == "no-store"
    assert result.headers["content-type"] == "application/json"

    fetched = client.simulate_get(result.headers["location"])
    assert fetched.status_code == 200
    assert fetched.json == {k: v for k, v in comment.items() if k in public}
    assert fetched.headers["cache-control"] == "no-store"


def test_unicode_is_nfc_normalised_and_emitted_raw(client: Client) -> None:
    decomposed = "Cafe\u0301 경제"
    result = post(client, {"author": "Zoë", "content": decomposed})
    assert result.status_code == 201
    assert result.json["content"] == "Café 경제"
    assert "경제".encode() in result.content  # not \u-escaped


def test_article_ids_are_percent_encoded_in_location(client: Client) -> None:
    for path in (
        "/api/v1/en/articles/with%20space/comments",
        "/api/v1/ko/articles/경제-1/comments",
    ):
        result = post(client, path=path)
        assert result.status_code == 201, result.text
        location = result.headers["location"]
        assert location.isascii() and " " not in location
        fetched = client.simulate_get(location).json
        assert fetched == {k: v for k, v in result.json.items() if k in fetched}


def test_parent_id_must_be_a_comment_of_the_same_article(client: Client) -> None:
    parent = post(client).json
    reply = post(client, {"author": "Bob", "content": "Re", "parent_id": parent["id"]})
    assert reply.status_code == 201
    assert reply.json["parent_id"] == parent["id"]
    assert post(client, {"author": "B", "content": "x", "parent_id": None}).status_code == 201

    other_article = post(
        client,
        {"author": "B", "content": "x", "parent_id": parent["id"]},
        path="/api/v1/en/articles/a2/comments",
    )
    other_language = post(
        client,
        {"author": "B", "content": "x", "parent_id": parent["id"]},
        path="/api/v1/fr/articles/a1/comments",
    )
    for result in (other_article, other_language):
        assert detail_locs(result) == [["body", "parent_id"]]
    for bad in ("nope", "", "x" * 500, "a\x00b", 12, ["x"]):
        result = post(client, {"author": "B", "content": "x", "parent_id": bad})
        assert detail_locs(result) == [["body", "parent_id"]], bad


def test_get_unknown_comment_and_article(client: Client) -> None:
    comment = post(client).json
    assert client.simulate_get(f"{BASE}/nope").json == {"detail": "Comment not found"}
    assert client.simulate_get(f"{BASE}/nope").status_code == 404
    assert client.simulate_get(f"{BASE}/{'x' * 300}").status_code == 404
    # A comment is only found under its own article and language.
    wrong = client.simulate_get(f"/api/v1/en/articles/a2/comments/{comment['id']}")
    assert wrong.json == {"detail": "Comment not found"}
    wrong = client.simulate_get(f"/api/v1/fr/articles/a1/comments/{comment['id']}")
    assert wrong.json == {"detail": "Comment not found"}
    missing = client.simulate_get(f"/api/v1/en/articles/zz/comments/{comment['id']}")
    assert (missing.status_code, missing.json) == (404, {"detail": "Article not found"})


# -- order of checks ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("method", "path", "kwargs"),
    [
        ("GET", "/api/v1/xx/articles/zz/comments", {"params": {"page": "abc"}}),
        ("POST", "/api/v1/xx/articles/zz/comments", {"body": "{", "content_type": "text/plain"}),
        ("GET", "/api/v1/xx/articles/zz/comments/count", {}),
        ("GET", "/api/v1/xx/articles/zz/comments/c1", {}),
        ("DELETE", "/api/v1/xx/articles/zz/comments/c1", {}),
        ("GET", "/api/v1/xx/comments/counts", {}),
        ("HEAD", "/api/v1/xx/articles/zz/comments", {}),
    ],
)
def test_language_is_checked_first(
    client: Client, method: str, path: str, kwargs: dict[str, Any]
) -> None:
    result = client.simulate_request(method, path, **kwargs)
    assert result.status_code == 400
    if method != "HEAD":
        assert result.json == {"detail": "Unsupported language: xx"}


def test_parameters_before_article(client: Client) -> None:
    assert detail_locs(
        client.simulate_get("/api/v1/en/articles/zz/comments", params={"page": "0"})
    ) == [["query", "page"]]
    assert detail_locs(post(client, {"author": ""}, path="/api/v1/en/articles/zz/comments")) == [
        ["body", "author"],
        ["body", "content"],
    ]
    assert post(client, path="/api/v1/en/articles/zz/comments").json == {
        "detail": "Article not found"
    }
    for path in (
        "/api/v1/en/articles/zz/comments",
        "/api/v1/en/articles/zz/comments/count",
        "/api/v1/de/articles/a1/comments",
    ):
        result = client.simulate_get(path)
        assert (result.status_code, result.json) == (404, {"detail": "Article not found"})


# -- body validation ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("body", "locs"),
    [
        ({"content": "x"}, [["body", "author"]]),
        ({"author": "x"}, [["body", "content"]]),
        ({}, [["body", "author"], ["body", "content"]]),
        ({"author": 5, "content": None}, [["body", "author"], ["body", "content"]]),
        ({"author": "   ", "content": "x"}, [["body", "author"]]),
        ({"author": "x", "content": " \n\t "}, [["body", "content"]]),
        ({"author": "a" * 81, "content": "x"}, [["body", "author"]]),
        ({"author": "x", "content": "c" * 5001}, [["body", "content"]]),
        ({"author": "a\x00b", "content": "x"}, [["body", "author"]]),
        ({"author": "x", "content": "bell\x07"}, [["body", "content"]]),
        ({"author": "x", "content": "cr\ronly"}, [["body", "content"]]),
        ({"author": "x", "content": "esc\x1b[31m"}, [["body", "content"]]),
        ({"author": "x", "content": "nel\x85"}, [["body", "content"]]),
        ({"author": "two\nlines", "content": "x"}, [["body", "author"]]),
        ({"author": "tab\there", "content": "x"}, [["body", "author"]]),
    ],
)
def test_invalid_fields(client: Client, body: dict[str, Any], locs: list[list[str]]) -> None:
    result = post(client, body)
    assert detail_locs(result) == locs
    for item in result.json["detail"]:
        assert set(item) >= {"loc", "msg", "type"}


def test_length_limits_count_characters_after_trimming(client: Client) -> None:
    body = {"author": "  " + "가" * 80 + "  ", "content": "\n" + "ó" * 5000 + "\n", "x": 1}
    result = post(client, body)
    assert result.status_code == 201
    assert len(result.json["author"]) == 80 and len(result.json["content"]) == 5000
    # NFC folds e + combining acute into one character: 5000 characters, not 10000.
    assert post(client, {"author": "x", "content": "e\u0301" * 5000}).status_code == 201
    # CRLF counts as a newline, not as a control character.
    assert post(client, {"author": "x", "content": "a\r\nb"}).json["content"] == "a\nb"


@pytest.mark.parametrize(
    ("raw", "loc"),
    [
        (b"{", ["body"]),
        (b"", ["body"]),
        (b"[1, 2]", ["body"]),
        (b'"text"', ["body"]),
        (b"null", ["body"]),
        (b'{"author": "x", "content": "\xff"}', None),  # not UTF-8
        (b'{"author": "x", "content": "\\ud800"}', None),  # lone surrogate
    ],
)
def test_invalid_json_is_422(client: Client, raw: bytes, loc: list[Any] | None) -> None:
    result = client.simulate_post(BASE, body=raw, content_type="application/json")
    (got,) = detail_locs(result)
    assert got == loc if loc else got[0] == "body"


@pytest.mark.parametrize(
    "content_type",
    [
        None,
        "text/plain",
        "application/x-www-form-urlencoded",
        "application/json; charset=latin-1",
        "multipart/form-data",
    ],
)
def test_non_json_content_type_is_415(client: Client, content_type: str | None) -> None:
    headers = {"Content-Type": content_type} if content_type else {}
    result = client.simulate_post(BASE, body=b'{"author": "a", "content": "b"}', headers=headers)
    assert result.status_code == 415
    assert isinstance(result.json["detail"], str)


def test_json_content_type_with_charset(client: Client) -> None:
    result = client.simulate_post(
        BASE,
        body=b'{"author": "a", "content": "b"}',
        content_type="Application/JSON; charset=UTF-8",
    )
    assert result.status_code == 201


def test_body_over_64_kib_is_413(client: Client) -> None:
    padding = "x" * (64 * 1024)
    result = post(client, {"author": "a", "content": "b", "padding": padding})
    assert result.status_code == 413
    assert isinstance(result.json["detail"], str)
    # Exactly 64 KiB is accepted (unknown fields are ignored).
    body = b'{"author": "a", "content": "b", "p": "'
    body += b"x" * (64 * 1024 - len(body) - 2) + b'"}'
    assert len(body) == 64 * 1024
    result = client.simulate_post(BASE, body=body, content_type="application/json")
    assert result.status_code == 201


class EndlessStream:
    """A request body that never ends; counts what the handler read."""

    def __init__(self) -> None:
        self.read_bytes = 0

    def read(self, size: int = -1) -> bytes:
        assert size is not None and size >= 0, "handler tried to read an unbounded body"
        self.read_bytes += size
        return b" " * size

    def readline(self, size: int = -1) -> bytes:
        return self.read(size)

    def readlines(self, hint: int = -1) -> list[bytes]:
        raise AssertionError("handler tried to read an unbounded body")

    def __iter__(self) -> EndlessStream:
        raise AssertionError("handler tried to read an unbounded body")


def test_413_does_not_read_an_unbounded_body(client: Client) -> None:
    declared = EndlessStream()
    result = client.simulate_post(
        BASE,
        content_type="application/json",
        extras={"wsgi.input": declared, "CONTENT_LENGTH": str(10**12)},
    )
    assert result.status_code == 413
    assert declared.read_bytes == 0
    assert result.headers["connection"] == "close"

    chunked = EndlessStream()  # no Content-Length: chunked transfer through gunicorn
    result = client.simulate_post(
        BASE,
        content_type="application/json",
        extras={"wsgi.input": chunked, "CONTENT_LENGTH": "", "wsgi.input_terminated": True},
    )
    assert result.status_code == 413
    assert chunked.read_bytes == 64 * 1024 + 1


# -- list, pagination, order -------------------------------------------------------------


def test_list_pagination_and_order(client: Client) -> None:
    created = [post(client, {"author": "a", "content": f"c{i}"}).json for i in range(7)]
    newest = client.simulate_get(BASE, params={"page_size": "3"}).json
    assert newest["total"] == 7 and newest["total_pages"] == 3
    assert (newest["page"], newest["page_size"]) == (1, 3)
    assert [c["id"] for c in newest["items"]] == [c["id"] for c in created[::-1][:3]]

    pages = [
        client.simulate_get(
            BASE, params={"page_size": "3", "page": str(p), "order": "oldest"}
        ).json["items"]
        for p in (1, 2, 3)
    ]
    assert [c["id"] for page in pages for c in page] == [c["id"] for c in created]
    assert [len(p) for p in pages] == [3, 3, 1]
    ordered = sorted(created, key=lambda c: (c["created_at"], c["id"]))
    assert ordered == created

    default = client.simulate_get(BASE).json
    assert default["page_size"] == 20 and default["items"][0]["id"] == created[-1]["id"]


def test_list_link_header_walks_the_pages(client: Client) -> None:
    created = [post(client, {"author": "a", "content": f"c{i}"}).json for i in range(7)]
    url, seen = f"{BASE}?order=oldest&page_size=3", []
    while url:
        path, _, query = url.partition("?")
        result = client.simulate_get(path, query_string=query)
        seen += [c["id"] for c in result.json["items"]]
        links = parse_link(result.headers["link"])
        assert page_of(links["first"]) == 1 and page_of(links["last"]) == 3
        assert all("order=oldest" in link for link in links.values())
        url = links.get("next", "")
    assert seen == [c["id"] for c in created]


@pytest.mark.parametrize("page", ["4", "9223372036854775808", "1" + "0" * 300])
def test_page_past_the_end(client: Client, page: str) -> None:
    for _ in range(5):
        post(client)
    result = client.simulate_get(BASE, params={"page": page, "page_size": "2"})
    assert result.status_code == 200
    assert result.json["items"] == []
    assert result.json["total"] == 5 and result.json["total_pages"] == 3
    assert result.json["page"] == int(page)
    links = parse_link(result.headers["link"])
    assert set(links) == {"first", "prev", "last"}
    assert page_of(links["prev"]) == page_of(links["last"]) == 3


def test_empty_list(client: Client) -> None:
    result = client.simulate_get("/api/v1/en/articles/a2/comments")
    assert result.json == {"items": [], "total": 0, "page": 1, "page_size": 20, "total_pages": 0}


@pytest.mark.parametrize(
    ("params", "loc"),
    [
        ({"page": "0"}, ["query", "page"]),
        ({"page": "1.5"}, ["query", "page"]),
        ({"page": ""}, ["query", "page"]),
        ({"page_size": "101"}, ["query", "page_size"]),
        ({"page_size": "0"}, ["query", "page_size"]),
        ({"page_size": "abc"}, ["query", "page_size"]),
        ({"order": "random"}, ["query", "order"]),
        ({"order": ""}, ["query", "order"]),
    ],
)
def test_list_parameter_errors(client: Client, params: dict[str, str], loc: list[str]) -> None:
    assert detail_locs(client.simulate_get(BASE, params=params)) == [loc]


def test_unknown_query_parameters_are_ignored(client: Client) -> None:
    assert client.simulate_get(BASE, params={"foo": "bar"}).status_code == 200


# -- counts -------------------------------------------------------------------------------


def test_count_matches_list_total(client: Client) -> None:
    for _ in range(3):
        post(client)
    post(client, path="/api/v1/fr/articles/a1/comments")
    result = client.simulate_get(f"{BASE}/count")
    assert result.json == {"article_id": "a1", "language": "en", "count": 3}
    assert result.headers["cache-control"] == "no-store"
    assert client.simulate_get(BASE).json["total"] == 3
    ko = client.simulate_get("/api/v1/ko/articles/경제-1/comments/count").json
    assert ko == {"article_id": "경제-1", "language": "ko", "count": 0}


def test_batch_counts(client: Client) -> None:
    for _ in range(2):
        post(client)
    post(client, path="/api/v1/en/articles/a2/comments")
    result = client.simulate_get(
        "/api/v1/en/comments/counts",
        params={"article_id": ["a1", "a2", "a3", "nope", "a1"]},
    )
    assert result.status_code == 200
    assert result.headers["cache-control"] == "no-store"
    assert result.json == {"language": "en", "counts": {"a1": 2, "a2": 1, "a3": 0, "nope": None}}
    # Articles are per language: "a2" is not a French article.
    result = client.simulate_get("/api/v1/fr/comments/counts", params={"article_id": ["a1", "a2"]})
    assert result.json == {"language": "fr", "counts": {"a1": 0, "a2": None}}
    single = client.simulate_get("/api/v1/en/comments/counts?article_id=a2")
    assert single.json["counts"] == {"a2": 1}


def test_batch_counts_bounds(client: Client) -> None:
    path = "/api/v1/en/comments/counts"
    assert detail_locs(client.simulate_get(path)) == [["query", "article_id"]]
    assert (
        client.simulate_get(path, params={"article_id": [f"x{i}" for i in range(100)]}).status_code
        == 200
    )
    too_many = client.simulate_get(path, params={"article_id": [f"x{i}" for i in range(101)]})
    assert detail_locs(too_many) == [["query", "article_id"]]


# -- delete ----------------------------------------------------------------------------


def test_delete_requires_the_admin_token(client: Client) -> None:
    comment = post(client).json
    path = f"{BASE}/{comment['id']}"
    for headers in (
        {},
        {"Authorization": "Bearer wrong"},
        {"Authorization": ADMIN_TOKEN},
        {"Authorization": f"Basic {ADMIN_TOKEN}"},
        {"Authorization": f"Bearer {ADMIN_TOKEN}x"},
    ):
        result = client.simulate_delete(path, headers=headers)
        assert result.status_code == 401, headers
        assert isinstance(result.json["detail"], str)
        assert result.headers["www-authenticate"].startswith("Bearer")
        assert ADMIN_TOKEN not in result.text
    assert client.simulate_get(path).status_code == 200


def test_delete_removes_from_list_count_get_and_counts(client: Client) -> None:
    keep, gone = post(client).json, post(client).json
    result = client.simulate_delete(
        f"{BASE}/{gone['id']}", headers={"Authorization": f"bearer  {ADMIN_TOKEN} "}
    )
    assert result.status_code == 204
    assert result.content == b""
    assert client.simulate_get(f"{BASE}/{gone['id']}").status_code == 404
    assert [c["id"] for c in client.simulate_get(BASE).json["items"]] == [keep["id"]]
    assert client.simulate_get(f"{BASE}/count").json["count"] == 1
    counts = client.simulate_get("/api/v1/en/comments/counts", params={"article_id": "a1"})
    assert counts.json["counts"] == {"a1": 1}
    # Deleting again, or a comment of another article, is a 404.
    assert client.simulate_delete(f"{BASE}/{gone['id']}", headers=AUTH).json == {
        "detail": "Comment not found"
    }
    other = client.simulate_delete(f"/api/v1/en/articles/a2/comments/{keep['id']}", headers=AUTH)
    assert other.status_code == 404
    missing = client.simulate_delete(f"/api/v1/en/articles/zz/comments/{keep['id']}", headers=AUTH)
    assert missing.json == {"detail": "Article not found"}
    # A deleted comment cannot be replied to.
    reply = post(client, {"author": "a", "content": "b", "parent_id": gone["id"]})
    assert detail_locs(reply) == [["body", "parent_id"]]


def test_without_moderators_only_the_author_can_erase(make_client: MakeClient) -> None:
    client = make_client(admin_token=None)
    comment = post(client).json
    path = f"{BASE}/{comment['id']}"
    for header in ("Bearer ", "Bearer test-admin-token", "Basic eDp5"):
        result = client.simulate_delete(path, headers={"Authorization": header})
        assert result.status_code == 401, header
        assert result.json["detail"] == "Unknown author token"
    assert client.simulate_get(path).status_code == 200
    mine = {"Authorization": f"Bearer {comment['author_token']}"}
    assert client.simulate_delete(path, headers=mine).status_code == 204
    assert client.simulate_get(path).status_code == 404


# -- HTTP conventions ----------------------------------------------------------------------


def test_head_works_wherever_get_does(client: Client) -> None:
    comment = post(client).json
    for path, params in [
        (BASE, None),
        (f"{BASE}/count", None),
        (f"{BASE}/{comment['id']}", None),
        ("/api/v1/en/comments/counts", {"article_id": "a1"}),
    ]:
        get = client.simulate_get(path, params=params)
        head = client.simulate_head(path, params=params)
        assert head.status_code == get.status_code == 200
        assert head.content == b""
        assert head.headers["cache-control"] == "no-store"
    assert client.simulate_head(f"{BASE}/nope").status_code == 404


@pytest.mark.parametrize(
    ("method", "path"),
    [
        ("PUT", BASE),
        ("DELETE", BASE),
        ("POST", f"{BASE}/count"),
        ("PUT", f"{BASE}/x"),
        ("PUT", "/api/v1/en/comments/counts"),
    ],
)
def test_wrong_method_is_405_with_allow(client: Client, method: str, path: str) -> None:
    result = client.simulate_request(method, path)
    assert result.status_code == 405
    assert "allow" in result.headers
    assert isinstance(result.json["detail"], str)


def test_openapi_describes_exactly_the_routes(client: Client) -> None:
    doc = openapi_document(ROUTES)
    served = doc["components"]["schemas"]
    assert set(served) >= {"Comment", "CommentList", "CommentCreate", "CommentCountsRequest"}
    spec = {path: item for path, item in doc["paths"].items() if "comment" in path}
    refs = re.findall(r'"#/components/schemas/(\w+)"', repr(spec).replace("'", '"'))
    assert refs and set(refs) <= set(served)
    assert {"Error", "ValidationError"} <= set(refs)
    expected = {
        "/api/v1/{language}/articles/{article_id}/comments": {"get", "head", "post"},
        "/api/v1/{language}/articles/{article_id}/comments/count": {"get", "head"},
        "/api/v1/{language}/articles/{article_id}/comments/{comment_id}": {
            "get",
            "head",
            "patch",
            "delete",
        },
        "/api/v1/{language}/comments/counts": {"get", "head", "post"},
        "/api/v1/comments/mine": {"get", "head", "delete"},
        "/api/v1/{language}/articles/{article_id}/comments/settings": {"get", "head", "put"},
        "/api/v1/{language}/articles/{article_id}/comments/{comment_id}/reports": {"post"},
        "/api/v1/{language}/articles/{article_id}/comments/{comment_id}/notices": {"post"},
        "/api/v1/{language}/articles/{article_id}/comments/{comment_id}/decision": {"post"},
    }
    assert {path: set(item) for path, item in spec.items()} == expected
    for template, methods in expected.items():
        path = template.format(language="en", article_id="a1", comment_id="c1")
        allowed = client.simulate_request("OPTIONS", path).headers["allow"].lower()
        assert {m.strip() for m in allowed.split(",")} - {"options"} == methods
        for method, operation in spec[template].items():
            declared = {p["name"] for p in operation["parameters"] if p["in"] == "path"}
            assert declared == set(re.findall(r"{(\w+)}", template)), (template, method)
