"""No response head over 8 KB, whatever the request (docs/reliability.md, "Bounded response
heads"): the bound nginx's proxy_buffer_size and every other front can take. A head over
it was a 502 from nginx that also marked the instance down."""

from __future__ import annotations

from typing import Any
from urllib.parse import quote

import falcon.testing
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from app.links import LINK_MAX_CHARS
from app.middleware import REQUEST_LINE_MAX
from tests.helpers import KO_ID, article_path

HEAD_MAX = 8192
# What a server adds to the app's head: `Date`, `Server`, `Connection` and the like.
SERVER_HEADERS = 128

PATHS = (
    "/api/v1/en/articles",
    "/api/v1/en/articles/search",
    "/api/v1/en/articles/latest",
    "/api/v1/en/feed.atom",
    "/api/v1/en/comments/counts",
    article_path("ko", KO_ID) + "/comments",
    article_path("en", "x" * 300) + "/comments",
    "/api/v1/en/categories",
    "/api/v1/xx/articles",
)
KNOWN = ("page", "page_size", "category", "q", "from", "to", "order", "fields", "highlight")
VALID = {
    "page": st.integers(1, 10**40).map(str),
    "page_size": st.integers(1, 100).map(str),
    "category": st.text(min_size=0, max_size=3000),
    "q": st.text(min_size=1, max_size=200),
    "from": st.sampled_from(["2026-11-01", "2020-01-01T00:00:00." + "0" * 3000 + "Z"]),
    "to": st.sampled_from(["2026-11-30", "2030-01-01"]),
    "order": st.sampled_from(["newest", "oldest", "relevance"]),
    "fields": st.sampled_from(["full", "summary"]),
    "highlight": st.sampled_from(["true", "false"]),
}
junk_name = st.text(min_size=1, max_size=40).filter(lambda s: s not in KNOWN)
junk_value = st.one_of(st.text(max_size=20), st.text(min_size=500, max_size=4000))
param = st.one_of(
    st.tuples(junk_name, junk_value),
    st.sampled_from(KNOWN).flatmap(lambda k: st.tuples(st.just(k), VALID[k])),
)


def head_size(result: falcon.testing.Result) -> int:
    """Bytes of the head as a server writes it: status line, headers, blank line."""
    size = len(f"HTTP/1.1 {result.status}\r\n") + 2
    for name, value in result.headers.items():
        size += len(name) + 2 + len(value.encode("latin-1")) + 2
    return size


@settings(max_examples=150, deadline=None, suppress_health_check=list(HealthCheck))
@given(
    path=st.sampled_from(PATHS),
    params=st.lists(param, max_size=300),
    method=st.sampled_from(["GET", "HEAD"]),
    headers=st.dictionaries(
        st.sampled_from(["Accept-Encoding", "If-None-Match", "X-Forwarded-For", "X-Junk"]),
        st.text(st.characters(min_codepoint=32, max_codepoint=126), max_size=4000),
        max_size=2,
    ),
)
def test_no_response_head_exceeds_8_kb(
    client: falcon.testing.TestClient,
    path: str,
    params: list[tuple[str, str]],
    method: str,
    headers: dict[str, str],
) -> None:
    query = "&".join(f"{quote(k, safe='')}={quote(v, safe='')}" for k, v in params)
    result = client.simulate_request(method, path, query_string=query or None, headers=headers)
    assert result.status_code < 500, result.text
    assert head_size(result) + SERVER_HEADERS <= HEAD_MAX, {
        k: len(v) for k, v in result.headers.items()
    }
    # The line as sent: method, target, protocol (the paths are percent-encoded already).
    line = len(f"{method} {path}{'?' if query else ''}{query} HTTP/1.1")
    assert (result.status_code == 414) == (line > REQUEST_LINE_MAX), line
    if line > REQUEST_LINE_MAX and method == "GET":
        assert result.json["detail"].startswith("URI Too Long")


def query_of(pairs: list[tuple[str, Any]]) -> str:
    return "&".join(f"{k}={v}" for k, v in pairs)


def test_the_old_worst_case_now_fits(client: falcon.testing.TestClient) -> None:
    """The reported request: ~8 KB of unknown parameters and `page=2`. Its head was ~32 KB."""
    junk = query_of([(f"junk{n}", "a" * 60) for n in range(110)])
    result = client.simulate_get("/api/v1/en/articles", query_string=f"{junk}&page=2")
    assert result.status_code == 200
    assert "junk" not in result.headers["link"]
    assert head_size(result) < 1024


def test_a_link_too_long_is_left_out_and_the_body_still_pages(
    client: falcon.testing.TestClient,
) -> None:
    category = "c" * (LINK_MAX_CHARS // 2)
    result = client.simulate_get("/api/v1/en/articles", query_string=f"category={category}&page=2")
    assert result.status_code == 200
    assert "link" not in result.headers
    assert result.json["page"] == 2 and result.json["total_pages"] == 0
    shorter = client.simulate_get("/api/v1/en/articles", query_string=f"category={'c' * 1000}")
    assert len(shorter.headers["link"]) <= LINK_MAX_CHARS


def test_request_line_bound_is_the_servers(client: falcon.testing.TestClient) -> None:
    """Exactly gunicorn's limit_request_line: the longest line passes, one byte more is 414."""
    path = "/api/v1/en/articles"
    fill = REQUEST_LINE_MAX - len(f"GET {path}?x= HTTP/1.1")
    ok = client.simulate_get(path, query_string=f"x={'a' * fill}")
    over = client.simulate_get(path, query_string=f"x={'a' * (fill + 1)}")
    assert ok.status_code == 200
    assert over.status_code == 414
    assert over.json == {
        "detail": f"URI Too Long: Request Line is too large ({REQUEST_LINE_MAX + 1}"
        f" > {REQUEST_LINE_MAX})"
    }
    assert over.headers["x-content-type-options"] == "nosniff"
