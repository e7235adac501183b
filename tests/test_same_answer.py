"""An answer is a function of (bundle, request target, negotiated coding) (docs/delivery.md,
"One answer per page and coding"): the same status, headers and bytes on the first request
and the hundredth, from any app instance, with the answer caches on or off, GET and HEAD
alike; and every ETag ever given validates (304) while the bundle is the same.

Oracle: the first answer seen for a (target, coding), from whichever app gave it. Three apps
serve the same bundle: two with answer caches of their own, one with the caches off.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import falcon
import falcon.testing
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from app.builder.builder import build
from app.config import Settings
from app.languages import LANGUAGES
from app.wsgi import create_app
from tests.helpers import article_path

SAMPLE = Path(__file__).resolve().parent.parent / "data" / "sample"
# What clients send: none, one coding, a browser's list, Safari's, explicit identity.
ACCEPT_ENCODINGS = (
    None,
    "gzip",
    "zstd",
    "br",
    "gzip, deflate, br, zstd",
    "gzip, deflate, br",
    "identity",
    "zstd;q=0.5, gzip",
)
Answer = tuple[str, list[tuple[str, str]], bytes]


class Apps:
    """Three apps over one bundle, the answers they gave, and the ETags seen."""

    def __init__(self, bundle: Path, tmp: Path) -> None:
        def client(name: str, cache_bytes: int) -> falcon.testing.TestClient:
            return falcon.testing.TestClient(
                create_app(
                    Settings(
                        bundle_dir=bundle,
                        comments_dsn=f"sqlite:///{tmp}/{name}.sqlite3",
                        response_cache_bytes=cache_bytes,
                    )
                )
            )

        self.clients = [client("a", 8 << 20), client("b", 8 << 20), client("off", 0)]
        self.oracle: dict[tuple[str, str], Answer] = {}
        self.etags: dict[tuple[str, str], set[str]] = {}

    def send(self, index: int, method: str, target: str, coding: str | None) -> Answer:
        path, _, query = target.partition("?")
        headers = {} if coding is None else {"Accept-Encoding": coding}
        result = self.clients[index].simulate_request(
            method, path, query_string=query, headers=headers
        )
        return result.status, sorted(result.headers.items()), result.content

    def check(self, index: int, method: str, target: str, coding: str | None) -> None:
        status, headers, body = self.send(index, method, target, coding)
        named = dict(headers)
        key = (target, named.get("content-encoding", "identity"))
        if "etag" in named:
            self.etags.setdefault(key, set()).add(named["etag"])
        if method == "GET":
            want = self.oracle.setdefault(key, (status, headers, body))
            assert (status, headers, body) == want, (index, method, target, coding)
        elif key in self.oracle:  # HEAD: the GET's status and headers, no body
            want_status, want_headers, _ = self.oracle[key]
            assert (status, headers, body) == (want_status, want_headers, b""), (
                index,
                method,
                target,
                coding,
            )


@pytest.fixture(scope="module")
def apps(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Apps]:
    out = tmp_path_factory.mktemp("sample") / "bundle"
    build(SAMPLE, out)
    yield Apps(out, tmp_path_factory.mktemp("comments"))


@pytest.fixture(scope="module")
def ids(apps: Apps) -> list[str]:
    client = apps.clients[2]
    return [
        article_path(language, item["id"])
        for language in LANGUAGES
        for item in client.simulate_get(f"/api/v1/{language}/articles?page_size=100").json["items"]
    ]


def targets(ids: list[str]) -> st.SearchStrategy[str]:
    language = st.sampled_from(LANGUAGES)
    return st.one_of(
        st.sampled_from(ids),
        st.builds(
            "/api/v1/{}/articles?page={}&page_size={}".format,
            language,
            st.integers(1, 3),
            st.sampled_from([1, 5, 20, 100]),
        ),
        st.builds("/api/v1/{}/articles?category=economy".format, language),
        st.builds("/api/v1/{}/articles/latest?limit={}".format, language, st.integers(1, 30)),
        st.builds(
            "/api/v1/{}/articles/search?q={}&page_size={}".format,
            language,
            st.sampled_from(["the", "economy", "2026", "la", "die", "%EA%B2%BD%EC%A0%9C", "x"]),
            st.sampled_from([5, 20, 50]),
        ),
        st.builds("/sitemaps/{}.xml".format, language),
        st.builds("/api/v1/{}/categories".format, language),
    )


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_every_answer_is_the_first_answer_of_its_target_and_coding(
    apps: Apps, ids: list[str], data: st.DataObject
) -> None:
    requests = data.draw(
        st.lists(
            st.tuples(
                st.sampled_from(range(len(apps.clients))),
                st.sampled_from(["GET", "GET", "HEAD"]),
                targets(ids),
                st.sampled_from(ACCEPT_ENCODINGS),
            ),
            min_size=1,
            max_size=10,
        )
    )
    # Repeated, and each also sent to every app: first answers and later ones must agree.
    for index, method, target, coding in requests + requests:
        apps.check(index, method, target, coding)
        for other in range(len(apps.clients)):
            apps.check(other, method, target, coding)


PAGES = [
    "/api/v1/en/articles?page_size=100",
    "/api/v1/ja/articles?page_size=17",
    "/api/v1/fr/articles/latest?limit=12",
    "/api/v1/en/articles/search?q=the&page_size=50",
    "/sitemaps/de.xml",
    "/api/v1/ko/categories",
]


@pytest.mark.parametrize("coding", ["gzip", "zstd", "br", "gzip, deflate, br, zstd", None])
def test_head_first_then_get_agree(tmp_path: Path, coding: str | None) -> None:
    """A fresh app asked HEAD first, then GET, then HEAD again: one set of headers."""
    out = tmp_path / "bundle"
    build(SAMPLE, out)
    fresh = Apps(out, tmp_path)
    for page in PAGES:
        for index in range(len(fresh.clients)):
            head = fresh.send(index, "HEAD", page, coding)
            get = fresh.send(index, "GET", page, coding)
            again = fresh.send(index, "HEAD", page, coding)
            assert head[:2] == get[:2] == again[:2], (index, page, coding)
            assert head[2] == again[2] == b"" and len(get[2]) == int(dict(get[1])["content-length"])


def test_every_etag_ever_given_validates(apps: Apps) -> None:
    for page in PAGES:
        for coding in ACCEPT_ENCODINGS:
            for _ in range(3):
                for index in range(len(apps.clients)):
                    apps.check(index, "HEAD", page, coding)
                    apps.check(index, "GET", page, coding)
    assert apps.etags
    for (target, coding), tags in apps.etags.items():
        assert len(tags) == 1, (target, coding, tags)  # one representation, one tag
        header = None if coding == "identity" else coding
        path, _, query = target.partition("?")
        for tag in tags:
            for client in apps.clients:
                result = client.simulate_get(
                    path,
                    query_string=query,
                    headers={
                        "If-None-Match": tag,
                        **({} if header is None else {"Accept-Encoding": header}),
                    },
                )
                assert result.status_code == 304 and result.headers["etag"] == tag, (target, tag)
